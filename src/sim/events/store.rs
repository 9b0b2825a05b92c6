//! Columnar storage of the security events of one Shield Zone.
//!
//! Every dimension value is interned once per store; an event is a row of `u32`
//! dictionary ids plus its timestamp and two packed references into string arenas
//! (log id, request-context JSON). Rows are kept sorted by timestamp descending, then
//! log id ascending, which is the order of flat search results, so a time window is a
//! contiguous range found by binary search.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::api::models::shield::Dimension;

/// Number of interned text columns: the nine dimensions plus the rule name.
pub(crate) const TEXT_COLUMNS: usize = 10;

/// An interned text column of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Dimension(Dimension),
    RuleName,
}

impl Column {
    pub const ALL: [Column; TEXT_COLUMNS] = [
        Column::Dimension(Dimension::Feature),
        Column::Dimension(Dimension::RuleId),
        Column::Dimension(Dimension::Ip),
        Column::Dimension(Dimension::Ja4),
        Column::Dimension(Dimension::Ua),
        Column::Dimension(Dimension::Url),
        Column::Dimension(Dimension::Asn),
        Column::Dimension(Dimension::Country),
        Column::Dimension(Dimension::Action),
        Column::RuleName,
    ];

    /// Position in the store's arrays: the dimensions in their order, then the rule name.
    pub fn index(self) -> usize {
        match self {
            Column::Dimension(dimension) => dimension.index(),
            Column::RuleName => Dimension::ALL.len(),
        }
    }
}

/// An event as inserted through the admin API or produced by the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventInput {
    #[serde(default)]
    pub log_id: Option<String>,
    pub timestamp: i64,
    pub feature: String,
    pub rule_id: String,
    pub ip: String,
    pub ja4: String,
    pub ua: String,
    pub url: String,
    pub asn: String,
    pub country: String,
    pub action: String,
    #[serde(default)]
    pub rule_name: String,
    #[serde(default)]
    pub log: Option<serde_json::Map<String, serde_json::Value>>,
}

impl EventInput {
    /// The value of a text column.
    pub fn text(&self, column: Column) -> &str {
        match column {
            Column::Dimension(dimension) => self.dimension(dimension),
            Column::RuleName => &self.rule_name,
        }
    }

    pub fn dimension(&self, dimension: Dimension) -> &str {
        match dimension {
            Dimension::Feature => &self.feature,
            Dimension::RuleId => &self.rule_id,
            Dimension::Ip => &self.ip,
            Dimension::Ja4 => &self.ja4,
            Dimension::Ua => &self.ua,
            Dimension::Url => &self.url,
            Dimension::Asn => &self.asn,
            Dimension::Country => &self.country,
            Dimension::Action => &self.action,
        }
    }
}

/// Interned values of one column, with their rank in ascending string order.
#[derive(Debug, Clone, Default)]
pub struct Dictionary {
    values: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, u32>,
    ranks: Vec<u32>,
}

impl Dictionary {
    fn intern(&mut self, value: &str) -> u32 {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = u32::try_from(self.values.len()).unwrap_or(u32::MAX);
        let value: Arc<str> = Arc::from(value);
        self.values.push(value.clone());
        self.ids.insert(value, id);
        id
    }

    fn refresh_ranks(&mut self) {
        if self.ranks.len() == self.values.len() {
            return;
        }
        let mut order: Vec<u32> = (0..self.values.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.values[*a as usize].cmp(&self.values[*b as usize]));
        self.ranks = vec![0; order.len()];
        for (rank, id) in order.into_iter().enumerate() {
            self.ranks[id as usize] = rank as u32;
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn value(&self, id: u32) -> &str {
        &self.values[id as usize]
    }

    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(|v| &**v)
    }

    /// Each id's [`Dictionary::rank`].
    pub(super) fn ranks(&self) -> &[u32] {
        &self.ranks
    }

    /// Position of `id` in ascending string order of all values.
    pub fn rank(&self, id: u32) -> u32 {
        self.ranks[id as usize]
    }

    fn heap_bytes(&self) -> usize {
        let strings: usize = self.values.iter().map(|v| v.len() + 16).sum();
        strings + self.values.capacity() * 16 + self.ids.capacity() * 24 + self.ranks.capacity() * 4
    }
}

/// Append-only string storage addressed by packed `(offset << 24) | len` references.
#[derive(Debug, Clone, Default)]
struct Arena {
    bytes: String,
}

const NO_REF: u64 = u64::MAX;
const LEN_BITS: u32 = 24;

impl Arena {
    fn push(&mut self, value: &str) -> u64 {
        let offset = self.bytes.len() as u64;
        let len = value.len().min((1 << LEN_BITS) - 1);
        self.bytes.push_str(&value[..floor_char_boundary(value, len)]);
        (offset << LEN_BITS) | len as u64
    }

    fn get(&self, reference: u64) -> Option<&str> {
        if reference == NO_REF {
            return None;
        }
        let offset = (reference >> LEN_BITS) as usize;
        let len = (reference & ((1 << LEN_BITS) - 1)) as usize;
        self.bytes.get(offset..offset + len)
    }
}

fn permute<T: Copy>(values: &mut Vec<T>, order: &[u32]) {
    *values = order.iter().map(|&i| values[i as usize]).collect();
}

fn floor_char_boundary(s: &str, mut index: usize) -> usize {
    while !s.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The events of one Shield Zone.
#[derive(Debug, Clone, Default)]
pub struct EventStore {
    dictionaries: [Dictionary; TEXT_COLUMNS],
    timestamps: Vec<i64>,
    columns: [Vec<u32>; TEXT_COLUMNS],
    log_ids: Vec<u64>,
    logs: Vec<u64>,
    id_arena: Arena,
    log_arena: Arena,
    next_generated_id: u64,
}

impl EventStore {
    pub fn len(&self) -> usize {
        self.timestamps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timestamps.is_empty()
    }

    pub fn dictionary(&self, column: Column) -> &Dictionary {
        &self.dictionaries[column.index()]
    }

    pub fn timestamp(&self, row: usize) -> i64 {
        self.timestamps[row]
    }

    /// Every row's timestamp, in row order.
    pub fn timestamps(&self) -> &[i64] {
        &self.timestamps
    }

    pub fn column(&self, column: Column) -> &[u32] {
        &self.columns[column.index()]
    }

    pub fn text(&self, column: Column, row: usize) -> &str {
        self.dictionaries[column.index()].value(self.columns[column.index()][row])
    }

    pub fn log_id(&self, row: usize) -> &str {
        self.id_arena.get(self.log_ids[row]).unwrap_or_default()
    }

    pub fn log(&self, row: usize) -> Option<serde_json::Map<String, serde_json::Value>> {
        self.log_arena
            .get(self.logs[row])
            .and_then(|json| serde_json::from_str(json).ok())
    }

    /// Appends events and restores the row order. Events without a log id get a
    /// generated one, unique within the store.
    pub fn insert(&mut self, events: impl IntoIterator<Item = EventInput>) {
        for event in events {
            for column in Column::ALL {
                let id = self.dictionaries[column.index()].intern(event.text(column));
                self.columns[column.index()].push(id);
            }
            self.timestamps.push(event.timestamp);
            let log_id = match &event.log_id {
                Some(id) => self.id_arena.push(id),
                None => {
                    self.next_generated_id += 1;
                    self.id_arena.push(&format!("ev-{:012x}", self.next_generated_id))
                }
            };
            self.log_ids.push(log_id);
            let log = match &event.log {
                Some(object) => self
                    .log_arena
                    .push(&serde_json::Value::Object(object.clone()).to_string()),
                None => NO_REF,
            };
            self.logs.push(log);
        }
        for dictionary in &mut self.dictionaries {
            dictionary.refresh_ranks();
        }
        self.sort_rows();
    }

    fn row_order(&self, a: usize, b: usize) -> Ordering {
        self.timestamps[b]
            .cmp(&self.timestamps[a])
            .then_with(|| self.log_id(a).cmp(self.log_id(b)))
    }

    fn sort_rows(&mut self) {
        let n = self.len();
        if (1..n).all(|i| self.row_order(i - 1, i) != Ordering::Greater) {
            return;
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by(|&a, &b| self.row_order(a as usize, b as usize));
        permute(&mut self.timestamps, &order);
        permute(&mut self.log_ids, &order);
        permute(&mut self.logs, &order);
        for column in &mut self.columns {
            permute(column, &order);
        }
    }

    /// Rows whose timestamp lies in `[from, to)`, as a contiguous index range.
    pub fn window(&self, from: i64, to: i64) -> std::ops::Range<usize> {
        let start = self.timestamps.partition_point(|&t| t >= to);
        let end = self.timestamps.partition_point(|&t| t >= from);
        start..end.max(start)
    }

    /// Approximate heap bytes held, for the memory benchmark.
    pub fn heap_bytes(&self) -> usize {
        let columns: usize = self.columns.iter().map(|c| c.capacity() * 4).sum();
        let dictionaries: usize = self.dictionaries.iter().map(Dictionary::heap_bytes).sum();
        columns
            + dictionaries
            + self.timestamps.capacity() * 8
            + self.log_ids.capacity() * 8
            + self.logs.capacity() * 8
            + self.id_arena.bytes.capacity()
            + self.log_arena.bytes.capacity()
    }

    /// Every event back as inserted (with generated log ids), in row order.
    pub fn events(&self) -> impl Iterator<Item = EventInput> + '_ {
        (0..self.len()).map(|row| {
            let text = |dimension| self.text(Column::Dimension(dimension), row).to_string();
            EventInput {
                log_id: Some(self.log_id(row).to_string()),
                timestamp: self.timestamps[row],
                feature: text(Dimension::Feature),
                rule_id: text(Dimension::RuleId),
                ip: text(Dimension::Ip),
                ja4: text(Dimension::Ja4),
                ua: text(Dimension::Ua),
                url: text(Dimension::Url),
                asn: text(Dimension::Asn),
                country: text(Dimension::Country),
                action: text(Dimension::Action),
                rule_name: self.text(Column::RuleName, row).to_string(),
                log: self.log(row),
            }
        })
    }
}
