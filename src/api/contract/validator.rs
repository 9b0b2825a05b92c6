//! A compiled JSON Schema validator whose violations name the member they are about.

use serde_json::Value;

use super::{Document, Required, schema};

/// A compiled validator of one component.
pub struct BodyValidator {
    validator: jsonschema::Validator,
}

impl BodyValidator {
    /// A validator of the component `name` of `document`.
    pub fn new(document: Document, name: &str, required: Required) -> Result<Self, String> {
        if !document.components().contains_key(name) {
            return Err(format!("{} has no schema `{name}`", document.file_name()));
        }
        Self::from_json_schema(&schema(document, name, required))
            .map_err(|e| format!("schema `{name}` of {}: {e}", document.file_name()))
    }

    /// A validator of any JSON Schema 2020-12 document.
    pub fn from_json_schema(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| e.to_string())?;
        Ok(Self { validator })
    }

    /// Every violation, as `member: message` with the member as a JSON pointer.
    pub fn violations(&self, body: &Value) -> Vec<String> {
        self.validator
            .iter_errors(body)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "(body)".to_string() } else { at };
                format!("{at}: {}", short(&e.to_string()))
            })
            .collect()
    }
}

fn short(message: &str) -> String {
    const MAX: usize = 200;
    if message.chars().count() <= MAX {
        return message.to_string();
    }
    let cut: String = message.chars().take(MAX).collect();
    format!("{cut}…")
}
