//! Whether a host lost mid-run would hold `mpirun` long after the watchdog gave up.
//!
//! The watchdog ends a stalled job within `--stall-timeout` (docs/SCALING.md, *The bound*),
//! but a host that can no longer be reached (its link cut, its power gone) is Open MPI's to give
//! up: its daemons talk over TCP, and with Open MPI's keepalive at its defaults (300 s of
//! silence, then 9 probes 20 s apart) and Linux's `tcp_retries2 = 15` (about 15 minutes of
//! retransmissions with data in flight), `mpirun` waits 8 to 15 minutes for that host's
//! daemon after the abort. A run on one host cannot lose one; a run on several can, and the
//! settings that bound the wait are known before any work starts, so [`lost_host_note`] says
//! so once at start, as a user meets it, rather than after the fact.

use crate::mca::Params;

/// Open MPI's parameter for the silence before TCP keepalive probes on its daemons'
/// connections, and its default (seconds).
const KEEPALIVE_TIME: &str = "oob_tcp_keepalive_time";
const KEEPALIVE_TIME_DEFAULT: u64 = 300;

/// What to say at start when a lost host would hold `mpirun` for minutes: `None` on one host,
/// or when Open MPI's keepalive is set to give a host up within a minute. Reads the job's
/// environment (`mpirun` passes `--mca` settings to every rank as `OMPI_MCA_*` variables and
/// says how many nodes it launched on) and Open MPI's parameter files.
pub fn lost_host_note() -> Option<String> {
    let retries = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_retries2").ok();
    note(&Params::here(), retries.as_deref())
}

/// [`lost_host_note`] from Open MPI's parameters as the rank sees them and
/// `/proc/sys/net/ipv4/tcp_retries2`.
fn note<E: Fn(&str) -> Option<String>>(
    params: &Params<E>,
    tcp_retries2: Option<&str>,
) -> Option<String> {
    let nodes: u64 = params.env("OMPI_MCA_orte_num_nodes")?.trim().parse().ok()?;
    if nodes < 2 {
        return None;
    }
    let keepalive = params
        .get(KEEPALIVE_TIME)
        .and_then(|value| value.parse::<u64>().ok())
        .unwrap_or(KEEPALIVE_TIME_DEFAULT);
    if keepalive < 60 {
        return None;
    }
    let retries = tcp_retries2
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|&retries| retries > 5)
        .map(|retries| {
            format!(
                ", and `sysctl net.ipv4.tcp_retries2=5` on every node (it is {retries} here: \
                 about 15 minutes with data in flight)"
            )
        })
        .unwrap_or_default();
    Some(format!(
        "ranks on {nodes} hosts with Open MPI's TCP keepalive after {keepalive} s: if a host is \
         lost mid-run, the watchdog ends the job but `mpirun` waits for that host for 8 minutes \
         or more; bound the wait with `mpirun --mca oob_tcp_keepalive_time 5 --mca \
         oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 5`{retries} \
         (docs/SCALING.md, *The bound*)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_job_on_several_hosts_with_the_default_keepalive_is_told() {
        let none: &[&str] = &[];
        let two = [("OMPI_MCA_orte_num_nodes", "2")];
        let said = note(&Params::of(&two, none), Some("15\n")).expect("two hosts, defaults");
        assert!(said.contains("ranks on 2 hosts"), "{said}");
        assert!(said.contains("keepalive after 300 s"), "{said}");
        assert!(said.contains("--mca oob_tcp_keepalive_time 5"), "{said}");
        assert!(
            said.contains("tcp_retries2=5") && said.contains("15 here"),
            "{said}"
        );
        let low_retries = note(&Params::of(&two, none), Some("5")).unwrap();
        assert!(!low_retries.contains("tcp_retries2"), "{low_retries}");
        // One host cannot be lost; outside mpirun nothing is known.
        assert_eq!(
            note(&Params::of(&[("OMPI_MCA_orte_num_nodes", "1")], none), None),
            None
        );
        assert_eq!(note(&Params::of(&[], none), None), None);
        // Set on the command line (`--mca`, which reaches the ranks as a variable) or in a
        // parameter file: nothing to say.
        let set = [
            ("OMPI_MCA_orte_num_nodes", "3"),
            ("OMPI_MCA_oob_tcp_keepalive_time", "5"),
        ];
        assert_eq!(note(&Params::of(&set, none), Some("15")), None);
        let file = "# site settings\nbtl = ^openib\noob_tcp_keepalive_time = 10 # seconds\n";
        assert_eq!(note(&Params::of(&two, &[file]), Some("15")), None);
        let commented = "# oob_tcp_keepalive_time = 10\n";
        assert!(note(&Params::of(&two, &[commented]), None).is_some());
        // A variable wins over a file, as in Open MPI.
        let long = [
            ("OMPI_MCA_orte_num_nodes", "2"),
            ("OMPI_MCA_oob_tcp_keepalive_time", "600"),
        ];
        let said = note(&Params::of(&long, &[file]), None).unwrap();
        assert!(said.contains("after 600 s"), "{said}");
    }
}
