//! Bodies generated from a JSON Schema (the published schemas as
//! `edge_operator::api::contract::schema` translates them): proptest strategies that
//! produce every shape the schema allows, nulls included.
//!
//! `Mode::Tolerant` also produces what a client must survive although the published
//! schema does not list it: enum strings in another case or unknown, and unknown
//! members where the schema forbids additional ones.

use proptest::prelude::*;
use proptest::strategy::Union;
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Only bodies the schema accepts.
    Strict,
    /// Strict bodies plus enum strings in any case or unknown, and unknown members.
    Tolerant,
}

/// Beyond this depth, optional members are left out and arrays are empty, so the
/// recursive schemas (rule conditions, templates) stay small.
const MAX_DEPTH: usize = 5;

/// A strategy for the root of `schema` (with its `$defs`).
pub(super) fn body(schema: &Value, mode: Mode) -> BoxedStrategy<Value> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    node(schema, &defs, mode, 0)
}

fn resolve<'a>(schema: &'a Value, defs: &'a Map<String, Value>) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => defs
            .get(reference.rsplit('/').next().unwrap_or_default())
            .unwrap_or(&Value::Null),
        None => schema,
    }
}

fn node(schema: &Value, defs: &Map<String, Value>, mode: Mode, depth: usize) -> BoxedStrategy<Value> {
    let schema = resolve(schema, defs);
    if let Some(alternatives) = schema.get("anyOf").and_then(Value::as_array) {
        let options: Vec<_> = alternatives.iter().map(|a| node(a, defs, mode, depth)).collect();
        return Union::new(options).boxed();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values = values.clone();
        let picked = prop::sample::select(values).boxed();
        return match mode {
            Mode::Strict => picked,
            Mode::Tolerant => (picked, 0..4u8)
                .prop_map(|(value, variant)| match (value, variant) {
                    (Value::String(s), 0) => Value::String(s.to_ascii_uppercase()),
                    (Value::String(s), 1) => Value::String(s.to_ascii_lowercase()),
                    (Value::String(_), 2) => json!("SomethingNew"),
                    (value, _) => value,
                })
                .boxed(),
        };
    }
    let types: Vec<String> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return any_value();
    }
    let options: Vec<(u32, BoxedStrategy<Value>)> = types
        .iter()
        .map(|t| {
            let weight = if t == "null" { 1 } else { 3 };
            (weight, typed(t, schema, defs, mode, depth))
        })
        .collect();
    Union::new_weighted(options).boxed()
}

fn typed(kind: &str, schema: &Value, defs: &Map<String, Value>, mode: Mode, depth: usize) -> BoxedStrategy<Value> {
    match kind {
        "null" => Just(Value::Null).boxed(),
        "boolean" => any::<bool>().prop_map(Value::Bool).boxed(),
        "integer" => {
            let min = schema.get("minimum").and_then(Value::as_i64).unwrap_or(i64::MIN);
            let max = schema.get("maximum").and_then(Value::as_i64).unwrap_or(i64::MAX);
            let small = (min.max(-1000)..=max.min(100_000)).boxed();
            Union::new_weighted(vec![(3, small), (1, (min..=max).boxed())])
                .prop_map(Value::from)
                .boxed()
        }
        "number" => (-1.0e6..1.0e6f64).prop_map(|f| json!(f)).boxed(),
        "string" => string(schema),
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            let unique = schema.get("uniqueItems").and_then(Value::as_bool) == Some(true);
            let max = if depth >= MAX_DEPTH { 0 } else { 2 };
            prop::collection::vec(node(&items, defs, mode, depth + 1), 0..=max)
                .prop_map(move |mut values| {
                    if unique {
                        let mut seen = std::collections::HashSet::new();
                        values.retain(|v| seen.insert(v.to_string()));
                    }
                    Value::Array(values)
                })
                .boxed()
        }
        "object" => object(schema, defs, mode, depth),
        _ => any_value(),
    }
}

fn string(schema: &Value) -> BoxedStrategy<Value> {
    match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => (0i64..4_102_444_800_000)
            .prop_map(|ms| {
                let time = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
                Value::String(time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            })
            .boxed(),
        Some("date-span") => (0u32..30, 0u32..24, 0u32..60)
            .prop_map(|(d, h, m)| Value::String(format!("{d}.{h:02}:{m:02}:00")))
            .boxed(),
        _ => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let pattern = format!("\\PC{{{min},12}}");
            proptest::string::string_regex(&pattern)
                .map(|s| s.prop_map(Value::String).boxed())
                .unwrap_or_else(|_| Just(Value::String("x".repeat(min as usize))).boxed())
        }
    }
}

fn object(schema: &Value, defs: &Map<String, Value>, mode: Mode, depth: usize) -> BoxedStrategy<Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let members: Vec<BoxedStrategy<Option<(String, Value)>>> = properties
        .iter()
        .map(|(name, member)| {
            let name = name.clone();
            let value = node(member, defs, mode, depth + 1);
            if required.contains(&name.as_str()) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else if depth >= MAX_DEPTH {
                Just(None).boxed()
            } else {
                prop::option::of(value)
                    .prop_map(move |v| v.map(|v| (name.clone(), v)))
                    .boxed()
            }
        })
        .collect();
    let additional = match schema.get("additionalProperties") {
        Some(Value::Bool(false)) if mode == Mode::Strict => None,
        Some(Value::Object(values)) if !values.is_empty() => {
            Some(node(&Value::Object(values.clone()), defs, mode, depth + 1))
        }
        _ => Some(any_value()),
    };
    let extras = match additional {
        Some(values) => prop::collection::btree_map("x[a-z]{1,6}", values, 0..=2).boxed(),
        None => Just(Default::default()).boxed(),
    };
    (members, extras)
        .prop_map(|(members, extras)| {
            let mut object: Map<String, Value> = extras.into_iter().collect();
            object.extend(members.into_iter().flatten());
            Value::Object(object)
        })
        .boxed()
}

/// Any small JSON value: what `{}` and an untyped `nullable` member allow.
fn any_value() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        (-1.0e3..1.0e3f64).prop_map(|f| json!(f)),
        "\\PC{0,8}".prop_map(Value::String),
        prop::collection::btree_map("[a-z]{1,5}", any::<i16>().prop_map(Value::from), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    ]
    .boxed()
}
