//! Whether Open MPI spends its start loading drivers for adapters this host does not have.
//!
//! Open MPI's `cm` messaging layer opens its PSM2 (Omni-Path) and PSM (TrueScale) transports at
//! every start, and loading each one's library costs about 0.1 s (their constructors calibrate
//! a clock by sleeping) before the transport finds no adapter and closes: on a host without
//! those adapters, two thirds of a rank's `MPI_Init` under Debian's Open MPI 4.1, and the same
//! in every rank of every run. Excluding them where their adapter is absent changes nothing
//! Open MPI would have chosen, so [`start_up_note`] says so, with the setting, when the start
//! was slow and the parameters in force let them load.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::mca::{Params, Selection};

/// The transports of Open MPI's `mtl` framework that need an adapter: the component, the
/// adapter's device files' prefix under `/dev` (Open MPI's own test before it uses one), and
/// what the adapter is.
const ADAPTERS: [(&str, &str, &str); 2] = [
    ("psm2", "hfi1_", "Omni-Path"),
    ("psm", "ipath", "TrueScale"),
];

/// A start shorter than this cannot have loaded one of them.
const SLOW_START: Duration = Duration::from_millis(100);

/// What to say at start when Open MPI loaded transports for adapters this host lacks
/// (`started_in`: how long `MPI_Init` took here). `None` outside `mpirun`, after a start too
/// short to have loaded one, or when the parameters in force do not let them load.
pub(crate) fn start_up_note(started_in: Duration) -> Option<String> {
    let components = component_dirs();
    let installed = |file: &str| components.iter().any(|dir| dir.join(file).exists());
    let adapter = |prefix: &str| {
        std::fs::read_dir("/dev").is_ok_and(|entries| {
            entries
                .flatten()
                .any(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
        })
    };
    note(&Params::here(), installed, adapter, started_in)
}

/// Where Open MPI keeps its components: the folders of the components it kept loaded after
/// its start (`mca_*.so` files mapped into this process; `$libdir/openmpi` in Open MPI's
/// layout, `…/openmpi/lib/openmpi3` in Debian's, which the compiled-in path alone would say).
fn component_dirs() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(Path::new)
        .filter(|path| {
            path.file_name().is_some_and(|name| {
                let name = name.to_string_lossy();
                name.starts_with("mca_") && name.ends_with(".so")
            })
        })
        .filter_map(|path| path.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// [`start_up_note`] from Open MPI's parameters as the rank sees them, which component files
/// are `installed`, which adapters' device files exist (`adapter`, by prefix) and the start's
/// time.
fn note<E: Fn(&str) -> Option<String>>(
    params: &Params<E>,
    installed: impl Fn(&str) -> bool,
    adapter: impl Fn(&str) -> bool,
    started_in: Duration,
) -> Option<String> {
    // Started by Open MPI's launcher, and slowly.
    params.env("OMPI_COMM_WORLD_SIZE")?;
    if started_in < SLOW_START {
        return None;
    }
    // The transports load only for the `cm` layer, and only where the `mtl` selection takes
    // them; a selection naming the transports to use is the user's choice.
    if !Selection::of(params.get("pml").as_deref()).takes("cm") {
        return None;
    }
    let mtl = params.get("mtl");
    let selection = Selection::of(mtl.as_deref());
    if let Selection::Only(_) = selection {
        return None;
    }
    let loaded: Vec<(&str, &str)> = ADAPTERS
        .iter()
        .filter(|(component, prefix, _)| {
            selection.takes(component)
                && installed(&format!("mca_mtl_{component}.so"))
                && !adapter(prefix)
        })
        .map(|&(component, _, what)| (component, what))
        .collect();
    if loaded.is_empty() {
        return None;
    }
    let mut excluded: Vec<&str> = match &selection {
        Selection::AllBut(names) => names.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    };
    excluded.extend(loaded.iter().map(|(component, _)| *component));
    let (each, drivers, adapters, them) = if loaded.len() == 1 {
        ("", "driver", "an adapter", "it")
    } else {
        (" each", "drivers", "adapters", "them")
    };
    let named: Vec<String> = loaded
        .iter()
        .map(|(component, what)| format!("{} ({what})", component.to_uppercase()))
        .collect();
    Some(format!(
        "Open MPI took {:.2} s to start here, of which about 0.1 s{each} loading its {} \
         {drivers}, for {adapters} this host does not have: `mpirun --mca mtl ^{}` skips {them} \
         and changes nothing else (docs/SCALING.md, *MPI: the fixed cost per run*)",
        started_in.as_secs_f64(),
        named.join(" and "),
        excluded.join(","),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAUNCHED: (&str, &str) = ("OMPI_COMM_WORLD_SIZE", "2");
    const DEBIAN: &str = "btl_base_warn_component_unused=0\nmtl = ^ofi\npml = ^ucx\n";
    const SLOW: Duration = Duration::from_millis(330);

    fn every(_: &str) -> bool {
        true
    }

    fn none(_: &str) -> bool {
        false
    }

    #[test]
    fn a_slow_start_that_loaded_drivers_for_absent_adapters_is_told_how_to_skip_them() {
        let said = note(&Params::of(&[LAUNCHED], &[DEBIAN]), every, none, SLOW)
            .expect("Debian's settings, no adapter, a slow start");
        assert!(said.contains("took 0.33 s"), "{said}");
        assert!(
            said.contains("0.1 s each loading its PSM2 (Omni-Path) and PSM (TrueScale) drivers"),
            "{said}"
        );
        // The exclusions in force are kept: the setting adds to them.
        assert!(said.contains("--mca mtl ^ofi,psm2,psm`"), "{said}");
        let unset = note(&Params::of(&[LAUNCHED], &[]), every, none, SLOW).unwrap();
        assert!(unset.contains("--mca mtl ^psm2,psm`"), "{unset}");
        // Only what loads is named: one component not installed, one adapter present.
        let one = note(
            &Params::of(&[LAUNCHED], &[DEBIAN]),
            |file| file == "mca_mtl_psm.so",
            none,
            SLOW,
        )
        .unwrap();
        assert!(
            one.contains("its PSM (TrueScale) driver, for an adapter"),
            "{one}"
        );
        assert!(one.contains("^ofi,psm`"), "{one}");
        let omni_path = note(
            &Params::of(&[LAUNCHED], &[DEBIAN]),
            every,
            |prefix| prefix == "hfi1_",
            SLOW,
        )
        .unwrap();
        assert!(!omni_path.contains("PSM2"), "{omni_path}");
    }

    #[test]
    fn nothing_is_said_where_nothing_would_change() {
        let quiet = |pairs: &[(&str, &str)], files: &[&str], started_in| {
            note(&Params::of(pairs, files), every, none, started_in)
        };
        // Outside mpirun, and a fast start.
        assert_eq!(quiet(&[], &[DEBIAN], SLOW), None);
        assert_eq!(
            quiet(&[LAUNCHED], &[DEBIAN], Duration::from_millis(90)),
            None
        );
        // Excluded already, by a variable or a file; a variable wins over a file.
        let excluded = ("OMPI_MCA_mtl", "^ofi,psm,psm2");
        assert_eq!(quiet(&[LAUNCHED, excluded], &[DEBIAN], SLOW), None);
        assert_eq!(quiet(&[LAUNCHED], &["mtl = ^psm2,psm,ofi"], SLOW), None);
        let reopened = ("OMPI_MCA_mtl", "^ofi");
        assert!(quiet(&[LAUNCHED, reopened], &["mtl = ^psm2,psm"], SLOW).is_some());
        // Transports named, or a messaging layer other than `cm` chosen: the user's choice.
        assert_eq!(
            quiet(&[LAUNCHED, ("OMPI_MCA_mtl", "psm2")], &[], SLOW),
            None
        );
        assert_eq!(quiet(&[LAUNCHED, ("OMPI_MCA_pml", "ob1")], &[], SLOW), None);
        assert_eq!(quiet(&[LAUNCHED], &["pml = ^cm,ucx"], SLOW), None);
        assert!(quiet(&[LAUNCHED, ("OMPI_MCA_pml", "cm,ob1")], &[], SLOW).is_some());
        // Nothing installed, or every adapter present.
        let launched = Params::of(&[LAUNCHED], &[DEBIAN]);
        assert_eq!(note(&launched, none, none, SLOW), None);
        assert_eq!(note(&launched, every, every, SLOW), None);
    }

    #[test]
    fn a_selection_reads_as_open_mpi_reads_it() {
        assert_eq!(Selection::of(None), Selection::All);
        assert_eq!(Selection::of(Some(" ")), Selection::All);
        assert!(Selection::of(Some("^ofi, psm2")).takes("psm"));
        assert!(!Selection::of(Some("^ofi, psm2")).takes("psm2"));
        assert!(Selection::of(Some("ob1,cm")).takes("cm"));
        assert!(!Selection::of(Some("ob1")).takes("cm"));
    }
}
