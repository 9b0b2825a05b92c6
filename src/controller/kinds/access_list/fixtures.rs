//! Objects, lists and statuses the tests of this kind start from.

use super::vocabulary::AccessListReason;
use crate::api::models::shield::{AccessListAction, AccessListItem};
use crate::controller::framework::pipeline::status::conditions::{NewCondition, merge};
use crate::controller::framework::reasons::ConditionType;
use crate::controller::kinds::access_list::resource::{
    AccessListConfigSpec, AccessListConfigStatus, DeletionPolicy, ManagementPolicy,
};

pub(super) fn spec(enabled: bool, action: Option<AccessListAction>) -> AccessListConfigSpec {
    AccessListConfigSpec {
        shield_zone_id: 1,
        configuration_id: Some(9101),
        list_name: None,
        enabled,
        action,
        management_policy: ManagementPolicy::Manage,
        deletion_policy: DeletionPolicy::Orphan,
        access_key_secret_ref: None,
        rollout: None,
    }
}

pub(super) fn item(enabled: bool, action: i32) -> AccessListItem {
    AccessListItem {
        list_id: 11,
        configuration_id: 9101,
        name: "Known bad actors".into(),
        is_enabled: enabled,
        action,
        ..AccessListItem::default()
    }
}

pub(super) fn converged(generation: i64) -> AccessListConfigStatus {
    AccessListConfigStatus {
        observed_generation: Some(generation),
        conditions: merge(
            &[],
            &[NewCondition::new(
                ConditionType::Ready,
                true,
                AccessListReason::InSync,
                "",
            )],
            Some(generation),
            "t",
        ),
        ..AccessListConfigStatus::default()
    }
}
