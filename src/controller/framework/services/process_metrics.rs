//! The standard `process_*` metrics of Prometheus client libraries, read from `/proc`
//! at each scrape: CPU time, memory, file descriptors, start time.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

#[derive(Debug, Default)]
pub(super) struct ProcessCollector;

/// One reading of the process, in the units of the metrics.
struct Reading {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_time_seconds: f64,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

fn read() -> procfs::ProcResult<Reading> {
    let process = procfs::process::Process::myself()?;
    let stat = process.stat()?;
    let ticks = procfs::ticks_per_second() as f64;
    let max_fds = match process.limits()?.max_open_files.soft_limit {
        procfs::process::LimitValue::Value(limit) => Some(limit as f64),
        procfs::process::LimitValue::Unlimited => None,
    };
    Ok(Reading {
        cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
        resident_bytes: (stat.rss * procfs::page_size()) as f64,
        virtual_bytes: stat.vsize as f64,
        start_time_seconds: procfs::boot_time_secs()? as f64 + stat.starttime as f64 / ticks,
        open_fds: process.fd_count().ok().map(|n| n as f64),
        max_fds,
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(reading) = read() else {
            return Ok(());
        };
        ConstCounter::new(reading.cpu_seconds).encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            MetricType::Counter,
        )?)?;
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                Some(reading.resident_bytes),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                Some(reading.virtual_bytes),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                Some(reading.start_time_seconds),
            ),
            ("process_open_fds", "Number of open file descriptors", reading.open_fds),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                reading.max_fds,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                ConstGauge::new(value).encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
            }
        }
        Ok(())
    }
}
