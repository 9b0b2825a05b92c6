//! OpenAPI 3.0 schema objects as JSON Schema 2020-12: `nullable` becomes a `null` type,
//! `int32`/`int64` become bounds, `$ref`s point into `$defs`.

use serde_json::{Map, Value, json};

/// Translates an OpenAPI 3.0 schema object (a CRD's `openAPIV3Schema`, one of the
/// published components) to JSON Schema 2020-12.
pub fn openapi_to_json_schema(node: &Value) -> Value {
    let Value::Object(members) = node else {
        return node.clone();
    };
    if let Some(Value::String(reference)) = members.get("$ref") {
        let name = reference.rsplit('/').next().unwrap_or_default();
        return json!({ "$ref": format!("#/$defs/{name}") });
    }
    let mut out = Map::new();
    for (key, value) in members {
        let converted = match key.as_str() {
            "properties" => Value::Object(
                value
                    .as_object()
                    .map(|p| p.iter().map(|(k, v)| (k.clone(), openapi_to_json_schema(v))).collect())
                    .unwrap_or_default(),
            ),
            "items" | "additionalProperties" | "not" => openapi_to_json_schema(value),
            "anyOf" | "oneOf" | "allOf" => Value::Array(
                value
                    .as_array()
                    .map(|a| a.iter().map(openapi_to_json_schema).collect())
                    .unwrap_or_default(),
            ),
            "nullable" | "format" => continue,
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    let bounds = match members.get("format").and_then(Value::as_str) {
        Some("int32") => Some((i64::from(i32::MIN), i64::from(i32::MAX))),
        Some("int64") => Some((i64::MIN, i64::MAX)),
        Some(other) => {
            out.insert("format".into(), Value::String(other.to_string()));
            None
        }
        None => None,
    };
    if let Some((min, max)) = bounds {
        // A bound the schema gives (integer or not) is kept: it lies inside the range.
        out.entry("minimum").or_insert_with(|| Value::from(min));
        out.entry("maximum").or_insert_with(|| Value::from(max));
    }
    if members.get("nullable").and_then(Value::as_bool) == Some(true) {
        if let Some(Value::String(kind)) = out.get("type").cloned() {
            out.insert("type".into(), json!([kind, "null"]));
        }
        if let Some(values) = out.get_mut("enum").and_then(Value::as_array_mut) {
            values.push(Value::Null);
        }
    }
    Value::Object(out)
}
