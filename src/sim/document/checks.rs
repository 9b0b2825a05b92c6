//! The rules of a fixtures document that serde cannot express: unique ids, accounts
//! that list what exists, and members of the platform's published types.

use super::*;

impl SimDocument {
    /// Rules serde cannot express: unique ids, and members of the types the platform
    /// publishes (`AccessListDetails`, the rate-limit rule schemas, `Application`).
    pub(super) fn check(&self) -> Result<(), DocumentError> {
        let invalid = |member: String, message: &str| DocumentError::Invalid {
            member,
            message: message.to_string(),
        };
        let validators = validators()?;
        let mut seen = HashSet::new();
        for (i, zone) in self.shield_zones.iter().enumerate() {
            if !seen.insert(zone.id) {
                return Err(invalid(format!("shieldZones[{i}].id"), "duplicate Shield Zone id"));
            }
            if let Some(id) = SHIELD_ZONE_IDS.iter().find(|id| zone.settings.contains_key(**id)) {
                return Err(invalid(
                    format!("shieldZones[{i}].settings.{id}"),
                    "is the zone's own id or pullZoneId, not a setting",
                ));
            }
            first_violation(
                &validators.shield_zone,
                &Value::Object(zone.settings.clone()),
                &format!("shieldZones[{i}].settings"),
            )?;
            let mut configurations = HashSet::new();
            for (j, list) in zone.access_lists.iter().enumerate() {
                let at = format!("shieldZones[{i}].accessLists[{j}]");
                list.check().map_err(|e| match e {
                    DocumentError::Invalid { member, message } => DocumentError::Invalid {
                        member: if member.starts_with('[') {
                            format!("{at}{member}")
                        } else {
                            format!("{at}.{member}")
                        },
                        message,
                    },
                    other => other,
                })?;
                let Some(configuration_id) = list.configuration_id() else {
                    return Err(invalid(format!("{at}.configurationId"), "is required"));
                };
                if !configurations.insert(configuration_id) {
                    return Err(invalid(
                        format!("{at}.configurationId"),
                        "duplicate configuration id in this zone",
                    ));
                }
            }
            for (j, rule) in zone.rate_limits.iter().enumerate() {
                if validators.custom_waf_rule.violations(rule).is_empty() {
                    continue;
                }
                first_violation(
                    &validators.rate_limit_rule,
                    rule,
                    &format!("shieldZones[{i}].rateLimits[{j}]"),
                )?;
            }
        }
        seen.clear();
        for (i, zone) in self.pull_zones.iter().enumerate() {
            if !seen.insert(zone.id) {
                return Err(invalid(format!("pullZones[{i}].id"), "duplicate Pull Zone id"));
            }
        }
        let mut app_ids = HashSet::new();
        for (i, app) in self.apps.iter().enumerate() {
            first_violation(&validators.application, app, &format!("apps[{i}]"))?;
            let id = app.get("id").and_then(Value::as_str).unwrap_or_default();
            if id.is_empty() {
                return Err(invalid(format!("apps[{i}].id"), "must be a non-empty string"));
            }
            if !app_ids.insert(id) {
                return Err(invalid(format!("apps[{i}].id"), "duplicate application id"));
            }
        }
        self.check_accounts()
    }

    /// Account names and keys are unique, and each resource an account lists exists
    /// and belongs to no other account.
    pub(super) fn check_accounts(&self) -> Result<(), DocumentError> {
        let invalid = |member: String, message: &str| DocumentError::Invalid {
            member,
            message: message.to_string(),
        };
        let mut names = HashSet::from([DEFAULT_ACCOUNT]);
        let mut keys: HashSet<&str> = self.access_keys.iter().map(String::as_str).collect();
        let mut owned = HashSet::new();
        for (i, account) in self.accounts.iter().enumerate() {
            if account.name.is_empty() || !names.insert(&account.name) {
                return Err(invalid(
                    format!("accounts[{i}].name"),
                    "must be non-empty, unique and not \"default\"",
                ));
            }
            for (j, key) in account.access_keys.iter().enumerate() {
                if !keys.insert(key) {
                    return Err(invalid(
                        format!("accounts[{i}].accessKeys[{j}]"),
                        "this key already belongs to an account",
                    ));
                }
            }
            let resources = account
                .shield_zones
                .iter()
                .map(|id| {
                    (
                        "shieldZones",
                        Resource::ShieldZone(*id),
                        self.shield_zones.iter().any(|z| z.id == *id),
                    )
                })
                .chain(account.pull_zones.iter().map(|id| {
                    (
                        "pullZones",
                        Resource::PullZone(*id),
                        self.pull_zones.iter().any(|z| z.id == *id),
                    )
                }))
                .chain(account.apps.iter().map(|id| {
                    let exists = self
                        .apps
                        .iter()
                        .any(|app| app.get("id").and_then(Value::as_str) == Some(id));
                    ("apps", Resource::App(id.clone()), exists)
                }));
            for (member, resource, exists) in resources {
                if !exists {
                    return Err(invalid(
                        format!("accounts[{i}].{member}"),
                        &format!("{resource} is not in the document"),
                    ));
                }
                if !owned.insert(resource.clone()) {
                    return Err(invalid(
                        format!("accounts[{i}].{member}"),
                        &format!("{resource} already belongs to another account"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The document, if every rule and app it serves has the platform's form once
    /// completed; else the first member that no default could stand for.
    pub(super) fn in_platform_form(self) -> Result<Self, DocumentError> {
        let form = always_sent::platform_form().map_err(DocumentError::Parse)?;
        for (i, zone) in self.shield_zones.iter().enumerate() {
            for (j, rule) in zone.rate_limits.iter().enumerate() {
                let validator = if always_sent::is_rate_limit_rule(rule) {
                    &form.rate_limit_rule
                } else {
                    &form.custom_waf_rule
                };
                first_violation(validator, rule, &format!("shieldZones[{i}].rateLimits[{j}]"))?;
            }
        }
        for (i, app) in self.apps.iter().enumerate() {
            first_violation(&form.application, app, &format!("apps[{i}]"))?;
        }
        Ok(self)
    }
}

impl SimAccessList {
    /// Every member present has its published type.
    pub fn check(&self) -> Result<(), DocumentError> {
        first_violation(&validators()?.access_list, &Value::Object(self.details.clone()), "")
    }
}

struct FixtureValidators {
    access_list: BodyValidator,
    custom_waf_rule: BodyValidator,
    rate_limit_rule: BodyValidator,
    application: BodyValidator,
    shield_zone: BodyValidator,
}

/// Fixtures may leave required members out (the emulator fills them in or serves
/// the document as given), but every member present has the published type.
fn validators() -> Result<&'static FixtureValidators, DocumentError> {
    static VALIDATORS: OnceLock<Result<FixtureValidators, String>> = OnceLock::new();
    let compiled = VALIDATORS.get_or_init(|| {
        Ok(FixtureValidators {
            access_list: BodyValidator::new(Document::Shield, "AccessListDetails", Required::Relaxed)?,
            custom_waf_rule: BodyValidator::new(Document::Shield, "CustomWafRule", Required::Relaxed)?,
            rate_limit_rule: BodyValidator::new(Document::Shield, "RateLimitRule", Required::Relaxed)?,
            application: BodyValidator::new(Document::MagicContainers, "Application", Required::Relaxed)?,
            shield_zone: BodyValidator::new(Document::ShieldZones, "ShieldZoneResponse", Required::Relaxed)?,
        })
    });
    compiled.as_ref().map_err(|e| DocumentError::Parse(e.clone()))
}

/// The first violation of `value`, named as `at` plus the member's path.
fn first_violation(validator: &BodyValidator, value: &Value, at: &str) -> Result<(), DocumentError> {
    match validator.violations(value).into_iter().next() {
        None => Ok(()),
        Some(violation) => {
            let (pointer, message) = violation.split_once(": ").unwrap_or(("", &violation));
            let member: String = pointer
                .split('/')
                .filter(|part| !part.is_empty() && *part != "(body)")
                .map(|part| match part.parse::<usize>() {
                    Ok(index) => format!("[{index}]"),
                    Err(_) => format!(".{part}"),
                })
                .collect();
            let member = format!("{at}{member}");
            Err(DocumentError::Invalid {
                member: member.trim_start_matches('.').to_string(),
                message: format!("{message} (the platform's published type)"),
            })
        }
    }
}
