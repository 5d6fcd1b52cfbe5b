//! Captures everything the process logs through `tracing`, so tests can
//! search it for secrets.

use std::io::Write;
use std::sync::{Mutex, Once};

static CAPTURED: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct CaptureWriter;

impl Write for CaptureWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURED
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber once for the whole test process, at
/// debug level (the SDK's HTTP internals at info).
pub fn capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("debug,hyper=info,hyper_util=info,h2=info,rustls=info")
            .with_ansi(false)
            .with_writer(|| CaptureWriter)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
    });
}

/// Everything logged so far by every test.
pub fn captured() -> String {
    String::from_utf8_lossy(&CAPTURED.lock().expect("log buffer")).into_owned()
}
