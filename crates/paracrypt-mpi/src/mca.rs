//! Open MPI's parameters as a rank sees them: `OMPI_MCA_*` variables first (`mpirun` passes its
//! `--mca` settings to every rank that way), then the parameter files, the user's before the
//! installation's, as Open MPI reads them. Only what paracrypt's notes at start need.

use std::path::PathBuf;

/// The job's environment and the parameter files' text, highest precedence first.
pub(crate) struct Params<E> {
    env: E,
    files: Vec<String>,
}

impl Params<fn(&str) -> Option<String>> {
    /// This process's environment and Open MPI's parameter files on this host.
    pub(crate) fn here() -> Self {
        let files = param_files()
            .into_iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect();
        Params {
            env: |name| std::env::var(name).ok(),
            files,
        }
    }
}

impl<E: Fn(&str) -> Option<String>> Params<E> {
    /// A variable of the job's environment.
    pub(crate) fn env(&self, name: &str) -> Option<String> {
        (self.env)(name)
    }

    /// The MCA parameter `name` where it is set: its `OMPI_MCA_` variable, else the first file
    /// that sets it.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.env(&format!("OMPI_MCA_{name}"))
            .or_else(|| self.files.iter().find_map(|text| from_file(text, name)))
    }
}

#[cfg(test)]
impl<'a> Params<Box<dyn Fn(&str) -> Option<String> + 'a>> {
    /// Parameters from the variables `pairs` and the files' text (highest precedence first).
    pub(crate) fn of(pairs: &'a [(&'a str, &'a str)], files: &[&str]) -> Self {
        Params {
            env: Box::new(move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            }),
            files: files.iter().map(|text| text.to_string()).collect(),
        }
    }
}

/// Open MPI's parameter files, as it reads them: the user's, then the installation's.
fn param_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        files.push(PathBuf::from(home).join(".openmpi/mca-params.conf"));
    }
    if let Some(prefix) = std::env::var_os("OPAL_PREFIX") {
        files.push(PathBuf::from(prefix).join("etc/openmpi-mca-params.conf"));
    }
    files.push(PathBuf::from("/etc/openmpi/openmpi-mca-params.conf"));
    files.push(PathBuf::from("/usr/local/etc/openmpi-mca-params.conf"));
    files
}

/// The value `name` has in a parameter file's text (`name = value` lines, `#` comments; the
/// last line wins).
fn from_file(text: &str, name: &str) -> Option<String> {
    text.lines()
        .filter_map(|line| line.split('#').next()?.split_once('='))
        .filter(|(key, _)| key.trim() == name)
        .map(|(_, value)| value.trim().to_string())
        .next_back()
}

/// A framework's component selection (`pml`, `mtl`, ...): `a,b` takes only those, `^a,b` all
/// but those, unset all.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Selection {
    All,
    Only(Vec<String>),
    AllBut(Vec<String>),
}

impl Selection {
    /// The selection a parameter's value (if set) makes.
    pub(crate) fn of(value: Option<&str>) -> Self {
        let names = |list: &str| -> Vec<String> {
            list.split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect()
        };
        match value.map(str::trim) {
            None | Some("") => Selection::All,
            Some(value) => match value.strip_prefix('^') {
                Some(excluded) => Selection::AllBut(names(excluded)),
                None => Selection::Only(names(value)),
            },
        }
    }

    /// Whether the component `name` may be opened.
    pub(crate) fn takes(&self, name: &str) -> bool {
        match self {
            Selection::All => true,
            Selection::Only(names) => names.iter().any(|n| n == name),
            Selection::AllBut(names) => !names.iter().any(|n| n == name),
        }
    }
}
