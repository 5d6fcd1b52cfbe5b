//! docs/api-notes.md stays findable: its index links every section and
//! every decision (`scripts/api-notes-index.py` makes it).

use std::path::Path;
use std::process::Command;

#[test]
fn the_api_notes_index_is_current() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let checked = Command::new("python3")
        .arg(root.join("scripts/api-notes-index.py"))
        .arg("--check")
        .output()
        .expect("python3 runs the index script");
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}
