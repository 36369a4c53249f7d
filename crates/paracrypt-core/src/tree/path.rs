//! Paths inside a tree: how they are checked, shown and named on disk.
//!
//! A path is the bytes of a file's name under the tree's root, its components joined by `/`
//! (the root itself is the empty path). A manifest's paths come from whoever wrote it, so every
//! one is checked before anything is created from it: no absolute path, no `.` or `..`, no
//! empty component, no NUL, at most [`MAX_PATH`] bytes.

/// The longest path a manifest may hold (Linux's `PATH_MAX`).
pub const MAX_PATH: usize = 4096;

/// The domain of the keyed hash that hides names (`--hide-names`).
const NAME_CONTEXT: &[u8] = b"paracrypt-tree-name-v1\0";

/// `path` for a message: lossy UTF-8 with control characters escaped, so that a message stays
/// one line whatever a file is called.
pub fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).escape_debug().to_string()
}

/// Why `path` cannot be a path in a tree, or `None` when it can (the empty path is the root).
pub(crate) fn fault(path: &[u8]) -> Option<&'static str> {
    if path.is_empty() {
        return None;
    }
    if path.len() > MAX_PATH {
        return Some("is longer than 4096 bytes");
    }
    if path.contains(&0) {
        return Some("holds a NUL byte");
    }
    if path.starts_with(b"/") {
        return Some("is absolute");
    }
    for component in path.split(|&b| b == b'/') {
        match component {
            b"" => return Some("has an empty component"),
            b"." | b".." => return Some("has a `.` or `..` component"),
            _ => {}
        }
    }
    None
}

/// The directory `path` is in (the empty path for a file at the root).
pub(crate) fn parent(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(at) => &path[..at],
        None => &[],
    }
}

/// Where the encrypted file of `path` is stored under the encrypted tree's root: the path with
/// the format's `suffix` (`a/b.txt` → `a/b.txt.pcr`), or, with hidden names, an opaque name
/// from a keyed hash of the path (`3f/0a…e1.pcr`: 128 bits, in 256 directories) that says
/// nothing of the path or the tree's shape without the manifest's name key.
pub(crate) fn stored(path: &[u8], suffix: &str, name_key: Option<&[u8; 32]>) -> Vec<u8> {
    match name_key {
        None => [path, suffix.as_bytes()].concat(),
        Some(key) => {
            let mut hasher = blake3::Hasher::new_keyed(key);
            hasher.update(NAME_CONTEXT);
            hasher.update(path);
            let digest = hasher.finalize();
            let hex = hex::encode(&digest.as_bytes()[..16]);
            format!("{}/{}{suffix}", &hex[..2], &hex[2..]).into_bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_would_leave_the_tree_are_refused() {
        for bad in [
            &b"/etc/passwd"[..],
            b"a/../../x",
            b"..",
            b"a//b",
            b"a/",
            b"./a",
            b"a\0b",
        ] {
            assert!(fault(bad).is_some(), "{}", shown(bad));
        }
        for good in [&b""[..], b"a", b"a/b.c", b"...", b"a/.hidden", b"\xff\n"] {
            assert_eq!(fault(good), None, "{}", shown(good));
        }
        assert!(fault(&[b'a'; 4097]).is_some());
        assert_eq!(parent(b"a/b/c"), b"a/b");
        assert_eq!(parent(b"c"), b"");
        assert_eq!(shown(b"a\nb\xff"), "a\\nb\u{fffd}");
    }

    #[test]
    fn stored_names_keep_the_path_or_hide_it() {
        assert_eq!(stored(b"a/b", ".pcr", None), b"a/b.pcr");
        let key = [7u8; 32];
        let hidden = stored(b"a/b", ".age", Some(&key));
        assert_eq!(hidden.len(), 2 + 1 + 30 + 4);
        assert_eq!(hidden[2], b'/');
        assert!(hidden.ends_with(b".age"));
        assert_ne!(hidden, stored(b"a/c", ".age", Some(&key)));
        assert_ne!(hidden, stored(b"a/b", ".age", Some(&[8u8; 32])));
    }
}
