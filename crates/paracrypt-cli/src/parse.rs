//! The command line, parsed: help wrapped to the terminal (80 columns when stdout is not one),
//! clap's refusals in the one-line `paracrypt: error:` form with exit status 2, and the short
//! flags renamed in this release still taken, each with one warning line naming the new spelling.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};

use crate::Cli;

/// Help's width when stdout is not a terminal (a pipe, a file, a man page viewer).
const PIPED_WIDTH: usize = 80;

/// Help's widest, on a terminal wider than this: longer lines are hard to read.
const MAX_WIDTH: usize = 100;

/// The command line's definition, with help wrapped to where it is printed.
pub fn command() -> clap::Command {
    let command = Cli::command().max_term_width(MAX_WIDTH);
    if std::io::stdout().is_terminal() {
        command
    } else {
        command.term_width(PIPED_WIDTH)
    }
}

/// A short flag renamed in this release: still taken, with a warning naming the new spelling.
pub struct Deprecated {
    /// The subcommands where it had this meaning.
    pub commands: &'static [&'static str],
    /// The letter.
    pub short: char,
    /// What it is now written as (it takes a value).
    pub long: &'static str,
    /// The warning line (after `paracrypt: warning: `).
    pub warning: &'static str,
}

/// The short flags renamed in this release (CHANGELOG.md, "Deprecated"): `-p` was
/// `--password-file` (age's `-p` is `--passphrase`, which it is to become) and, in `verify`,
/// `--public` (`-k` is the key file everywhere).
pub const DEPRECATED: &[Deprecated] = &[
    Deprecated {
        commands: &["encrypt", "decrypt", "rekey", "info", "raw"],
        short: 'p',
        long: "--password-file",
        warning: "-p FILE is deprecated: write --password-file FILE (-p is to mean \
                  --passphrase, as in age)",
    },
    Deprecated {
        commands: &["verify"],
        short: 'p',
        long: "--public",
        warning: "verify -p PUB is deprecated: write --public PUB (or --verify-with PUB)",
    },
];

/// The arguments with each deprecated short flag written as its long name (`-fpFILE` →
/// `-f --password-file=FILE`), and the warnings to print. A value (`-o -p`) and what follows
/// `--` are left as they are.
pub fn rewrite(
    command: &mut clap::Command,
    args: Vec<std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Vec<&'static str>) {
    command.build();
    let mut warnings = Vec::new();
    let Some(at) = args.iter().skip(1).position(|arg| {
        arg.to_str()
            .is_some_and(|name| command.find_subcommand(name).is_some())
    }) else {
        return (args, warnings);
    };
    let at = at + 1;
    let name = args[at].to_str().unwrap_or_default().to_owned();
    let Some(sub) = command.find_subcommand(&name) else {
        return (args, warnings);
    };
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let short_takes: Vec<char> = sub
        .get_arguments()
        .filter(|a| takes_value(a))
        .filter_map(clap::Arg::get_short)
        .collect();
    let long_takes: Vec<String> = sub
        .get_arguments()
        .filter(|a| takes_value(a))
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let renamed = |c: char| {
        DEPRECATED
            .iter()
            .find(|d| d.short == c && d.commands.contains(&name.as_str()))
    };
    let mut out: Vec<std::ffi::OsString> = args[..=at].to_vec();
    let mut rest = args[at + 1..].iter();
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg.clone());
            continue;
        };
        if text == "--" {
            out.push(arg.clone());
            out.extend(rest.cloned());
            break;
        }
        if text.starts_with("--") {
            out.push(arg.clone());
            if long_takes.iter().any(|l| l == text) {
                out.extend(rest.next().cloned());
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            out.push(arg.clone());
            continue;
        };
        // A cluster of flags: those before the first that takes a value, then that one with
        // its value (the cluster's rest, or the next argument).
        let mut flags = String::new();
        let mut pushed = false;
        for (i, c) in cluster.char_indices() {
            if let Some(d) = renamed(c) {
                if !flags.is_empty() {
                    out.push(format!("-{flags}").into());
                }
                let value = &cluster[i + c.len_utf8()..];
                if value.is_empty() {
                    out.push(d.long.into());
                    out.extend(rest.next().cloned());
                } else {
                    out.push(format!("{}={value}", d.long).into());
                }
                if !warnings.contains(&d.warning) {
                    warnings.push(d.warning);
                }
                pushed = true;
                break;
            }
            if short_takes.contains(&c) {
                let value_follows = i + c.len_utf8() == cluster.len();
                out.push(arg.clone());
                if value_follows {
                    out.extend(rest.next().cloned());
                }
                pushed = true;
                break;
            }
            flags.push(c);
        }
        if !pushed {
            out.push(arg.clone());
        }
    }
    (out, warnings)
}

/// Parses the process's arguments. `--help` and `--version` print and exit 0 as clap does; any
/// other refusal is one line on stderr and exit status 2. A deprecated short flag is taken as
/// its new spelling, with a warning line (printed with `-q` too: it is the command line that
/// must change).
pub fn parse() -> Result<Cli, ExitCode> {
    let mut command = command();
    let (args, warnings) = rewrite(&mut command, std::env::args_os().collect());
    for warning in warnings {
        crate::exit::warn(warning);
    }
    let path = command_path(&command, &args);
    let parsed = command
        .try_get_matches_from(args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    match parsed {
        Ok(cli) => Ok(cli),
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            error.exit()
        }
        Err(error) => {
            crate::exit::say!("paracrypt: error: {}", one_line(&error, &path));
            Err(ExitCode::from(2))
        }
    }
}

/// clap's refusal on one line: its message, its suggestion (`a similar argument exists`), and
/// where to read more (`see paracrypt encrypt -h`: `path` is the command run).
pub fn one_line(error: &clap::Error, path: &str) -> String {
    let rendered = error.render().to_string();
    // Blocks: the message (with its indented list, as the required arguments missing), tips,
    // the usage, "For more information".
    let mut blocks = rendered.split("\n\n").map(|block| {
        block
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
    });
    let message = blocks.next().unwrap_or_default().join(" ");
    let mut line = message
        .strip_prefix("error: ")
        .unwrap_or(&message)
        .to_owned();
    for tip in blocks.flatten().filter_map(|l| l.strip_prefix("tip: ")) {
        line.push_str("; ");
        line.push_str(tip);
    }
    line.push_str(&format!(" (see {path} -h)"));
    line
}

/// The (sub)command `args` run, as typed: `paracrypt rsa keygen`.
pub fn command_path(command: &clap::Command, args: &[std::ffi::OsString]) -> String {
    let mut path = vec![command.get_name().to_owned()];
    let mut current = command;
    for arg in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(sub) = current.find_subcommand(arg) {
            path.push(sub.get_name().to_owned());
            current = sub;
        }
    }
    path.join(" ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Every short flag of every subcommand, with the long name it stands for there.
    fn shorts(command: &clap::Command, path: &str, seen: &mut Vec<(char, String, String)>) {
        for arg in command.get_arguments() {
            if let Some(short) = arg.get_short() {
                let long = arg.get_long().unwrap_or("").to_owned();
                seen.push((short, long, path.to_owned()));
            }
        }
        for sub in command.get_subcommands() {
            shorts(sub, &format!("{path} {}", sub.get_name()), seen);
        }
    }

    /// One meaning per short flag across every subcommand: a flag added with a letter that
    /// means something else elsewhere fails here. The deprecated letters are not defined where
    /// they are rewritten (else the rewrite would hide the new flag).
    #[test]
    fn one_meaning_per_short_flag() {
        let mut command = Cli::command();
        command.build();
        let mut seen = Vec::new();
        shorts(&command, "paracrypt", &mut seen);
        let mut meaning: BTreeMap<char, (String, String)> = BTreeMap::new();
        for (short, long, path) in &seen {
            if let Some((first, where_)) = meaning.get(short) {
                assert_eq!(
                    first, long,
                    "-{short} is --{first} in `{where_}` but --{long} in `{path}`"
                );
            } else {
                meaning.insert(*short, (long.clone(), path.clone()));
            }
        }
        // The letters age has, with age's meaning.
        for (short, long) in [
            ('r', "recipient"),
            ('R', "recipients-file"),
            ('i', "identity"),
            ('o', "output"),
            ('a', "armor"),
            ('k', "key-file"),
        ] {
            assert_eq!(meaning[&short].0, long, "-{short}");
        }
        for deprecated in DEPRECATED {
            for name in deprecated.commands {
                let sub = command.find_subcommand(name).unwrap();
                assert!(
                    sub.get_arguments()
                        .all(|a| a.get_short() != Some(deprecated.short)),
                    "-{} is deprecated in {name} but defined there",
                    deprecated.short
                );
                let long = deprecated.long.trim_start_matches("--");
                assert!(
                    sub.get_arguments().any(|a| a.get_long() == Some(long)),
                    "{name} has no {long}"
                );
            }
        }
    }

    fn rewritten(args: &[&str]) -> (Vec<String>, usize) {
        let args = args.iter().map(Into::into).collect();
        let (out, warnings) = rewrite(&mut Cli::command(), args);
        let out = out.into_iter().map(|a| a.into_string().unwrap()).collect();
        (out, warnings.len())
    }

    #[test]
    fn deprecated_short_flags_are_rewritten() {
        let (out, n) = rewritten(&["paracrypt", "encrypt", "-p", "pw", "in"]);
        assert_eq!(out, ["paracrypt", "encrypt", "--password-file", "pw", "in"]);
        assert_eq!(n, 1);
        let (out, _) = rewritten(&["paracrypt", "decrypt", "-fqppw", "in"]);
        assert_eq!(
            out,
            ["paracrypt", "decrypt", "-fq", "--password-file=pw", "in"]
        );
        let (out, _) = rewritten(&["paracrypt", "verify", "-p", "pub.pem", "file"]);
        assert_eq!(out, ["paracrypt", "verify", "--public", "pub.pem", "file"]);
        // A value, what follows `--`, and a command where -p is not deprecated are kept.
        for args in [
            &["paracrypt", "encrypt", "-o", "-p", "in"][..],
            &["paracrypt", "encrypt", "-fo", "-p", "in"],
            &["paracrypt", "encrypt", "--output", "-p", "in"],
            &["paracrypt", "encrypt", "-k", "key", "--", "-p"],
            &["paracrypt", "sign", "-p", "x"],
            &["paracrypt", "--provider", "aws-lc", "keygen", "-p"],
        ] {
            let (out, n) = rewritten(args);
            assert_eq!(out, args, "{args:?}");
            assert_eq!(n, 0, "{args:?}");
        }
        let (out, _) = rewritten(&["paracrypt", "--provider", "aws-lc", "rekey", "-p", "pw"]);
        assert_eq!(out[4..], ["--password-file", "pw"]);
    }

    fn refused(args: &[&str]) -> String {
        let mut command = Cli::command();
        command.build();
        let os: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let path = command_path(&command, &os);
        one_line(&command.try_get_matches_from(os).unwrap_err(), &path)
    }

    /// clap's refusals, on one line, naming the command's help.
    #[test]
    fn parse_errors_are_one_line() {
        let line = refused(&["paracrypt", "encrypt", "--chunk-size", "1.5MB"]);
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.starts_with("invalid value '1.5MB' for '--chunk-size"),
            "{line}"
        );
        assert!(line.ends_with(" (see paracrypt encrypt -h)"), "{line}");
        let line = refused(&["paracrypt", "decrypt", "--forc"]);
        assert!(
            line.contains("a similar argument exists: '--force'"),
            "{line}"
        );
        assert!(line.ends_with(" (see paracrypt decrypt -h)"), "{line}");
        let line = refused(&["paracrypt", "rsa", "keygen", "--bits", "x"]);
        assert!(line.ends_with(" (see paracrypt rsa keygen -h)"), "{line}");
        assert!(refused(&["paracrypt", "nonsense"]).ends_with("(see paracrypt -h)"));
        let line = refused(&["paracrypt", "sign", "file"]);
        assert!(line.contains("not provided: --key-file <KEY>"), "{line}");
    }
}
