//! The mistakes table (`tests/mistakes/table.json`, read its `about`) through the command
//! line: each common mistake is refused with its class's exit status and one line that holds
//! the row's words (the way out), leaves nothing at the output and changes no existing file.
//! The Python package runs the same table (crates/paracrypt-py/tests/test_mistakes.py).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

#[test]
fn every_common_mistake_gets_its_hint_and_leaves_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let text = std::fs::read_to_string(root.join("mistakes/table.json")).expect("the table");
    let table: Value = serde_json::from_str(&text).expect("the table is JSON");
    let files = root.join("refusals/files");
    let mut ran = 0;
    for row in table["rows"].as_array().expect("rows") {
        let mistake = row["mistake"].as_str().expect("a mistake");
        let Some(args) = row["cli"].as_array() else {
            assert!(
                row["why"].is_string(),
                "{mistake}: a row without a CLI door says why"
            );
            continue;
        };
        let outcome = &table["outcomes"][row["outcome"].as_str().expect("an outcome")];
        let code = outcome["exit"].as_i64().expect("an exit status") as i32;
        let scratch = scratch();
        let out = scratch.path().join("out");
        let dir = scratch.path().join("dir");
        let exists = scratch.path().join("exists");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(&exists, b"left as it was\n").unwrap();
        let fill = |arg: &Value| -> String {
            match arg.as_str().expect("an argument") {
                "{out}" => out.display().to_string(),
                "{dir}" => dir.display().to_string(),
                "{exists}" => exists.display().to_string(),
                other => other.to_owned(),
            }
        };
        // No controlling terminal (setsid), so that no prompt can be reached, and no password
        // in the environment.
        let mut cmd = Command::new("setsid");
        cmd.arg("-w")
            .arg(env!("CARGO_BIN_EXE_paracrypt"))
            .args(args.iter().map(fill))
            .current_dir(&files)
            .env_remove("PARACRYPT_PASSWORD");
        let (status, stderr) = status_and_stderr(&run(cmd));
        assert_eq!(status, code, "{mistake}: exit status; stderr: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{mistake}: one line, got: {stderr}");
        assert!(
            lines[0].starts_with("paracrypt: error: "),
            "{mistake}: {stderr}"
        );
        for words in row["says"].as_array().expect("says") {
            let words = words.as_str().unwrap();
            assert!(
                stderr.contains(words),
                "{mistake}: `{words}` not in: {stderr}"
            );
        }
        assert!(!out.exists(), "{mistake}: an output was left");
        assert_eq!(
            listing(scratch.path()),
            ["dir", "exists"],
            "{mistake}: something was left beside the output"
        );
        assert!(
            listing(&dir).is_empty(),
            "{mistake}: the directory was written to"
        );
        assert_eq!(
            std::fs::read(&exists).unwrap(),
            b"left as it was\n",
            "{mistake}"
        );
        ran += 1;
    }
    assert!(ran >= 15, "the table's CLI rows ran: {ran}");
}
