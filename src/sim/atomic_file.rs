//! Files replaced whole: a reader (or a restart after a crash) finds the old content
//! or the new, never a part.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// Writes `bytes` to `path` through a temporary file in the same folder, synced and
/// renamed over it; the file is readable by its owner only. The temporary has a random
/// name and is created exclusively (`O_EXCL`): a file or symlink planted in the folder
/// is never opened, let alone written through.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|failed| failed.error)?;
    std::fs::File::open(folder)?.sync_all()
}

/// Runs `write` (off the runtime) after each burst of `changes`: `quiet` after the
/// first change of a burst, so a burst costs one write; and once more when `stop`
/// resolves, if anything changed since the last write.
pub(crate) async fn write_after_changes(
    changes: Arc<Notify>,
    quiet: Duration,
    stop: impl std::future::Future<Output = ()>,
    write: Arc<dyn Fn() + Send + Sync>,
) {
    use futures::FutureExt;
    tokio::pin!(stop);
    let pending = loop {
        tokio::select! {
            biased;
            () = changes.notified() => {}
            () = &mut stop => break changes.notified().now_or_never().is_some(),
        }
        tokio::select! {
            () = tokio::time::sleep(quiet) => {}
            () = &mut stop => break true,
        }
        // Changes told during the quiet time are in this write.
        let _ = changes.notified().now_or_never();
        run(&write).await;
    };
    if pending {
        run(&write).await;
    }
}

async fn run(write: &Arc<dyn Fn() + Send + Sync>) {
    let write = write.clone();
    if let Err(error) = tokio::task::spawn_blocking(move || write()).await {
        tracing::error!(%error, "a state write failed");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_write_replaces_the_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        super::write(&path, b"first, and longer").expect("write");
        super::write(&path, b"second").expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .filter_map(Result::ok)
            .collect();
        assert_eq!(names.len(), 1, "only the file itself is left");
    }

    #[cfg(unix)]
    #[test]
    fn links_planted_in_the_folder_are_never_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"untouched").expect("write");
        let path = dir.path().join("state.json");
        for guess in [
            format!(".state.json.{}.tmp", std::process::id()),
            ".state.json.tmp".to_string(),
        ] {
            std::os::unix::fs::symlink(&victim, dir.path().join(guess)).expect("symlink");
        }
        super::write(&path, b"state").expect("write");
        assert_eq!(std::fs::read(&victim).expect("read"), b"untouched");
        assert_eq!(std::fs::read(&path).expect("read"), b"state");
        assert!(!std::fs::symlink_metadata(&path).expect("stat").is_symlink());
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_changes_costs_one_write_and_stop_writes_what_is_pending() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let changes = std::sync::Arc::new(tokio::sync::Notify::new());
        let writes = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = writes.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let writer = tokio::spawn(super::write_after_changes(
            changes.clone(),
            std::time::Duration::from_secs(1),
            async move {
                let _ = stopped.await;
            },
            std::sync::Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
        ));
        for _ in 0..100 {
            changes.notify_one();
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        assert_eq!(writes.load(Ordering::SeqCst), 1, "one write for the burst");
        changes.notify_one();
        tokio::task::yield_now().await;
        let _ = stop.send(());
        writer.await.expect("writer");
        assert_eq!(
            writes.load(Ordering::SeqCst),
            2,
            "the pending change is written at stop"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.json");
        super::write(&path, b"{}").expect("write");
        let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
