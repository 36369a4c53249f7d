//! `paracrypt sign` and `paracrypt verify`: detached signatures of large files over a tree
//! hash of their chunks, hashed on every core (`docs/SIGNATURES.md`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::Runner;
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::sign::{Signature, minisign, sshsig};

use crate::exit::{Hinted, usage};
use crate::flags::{DistributedFlags, ThreadsFlag, heading, parse_chunk_size};
use crate::io::{Input, OutputPolicy, OutputTarget};
use crate::people::IdentityFlags;
use crate::secret::SecretArgs;
use crate::spec::Operation;

/// The signature formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// paracrypt's tree-hash signature (FILE.psig): hashed on every core, range checks.
    Paracrypt,
    /// OpenSSH's SSHSIG (FILE.sig), as `ssh-keygen -Y sign` makes and `ssh-keygen -Y verify`
    /// checks: Ed25519 keys, SHA-512 of the whole file on one core.
    Sshsig,
    /// minisign's prehashed signature (FILE.minisig), as `minisign -V` checks: Ed25519 keys,
    /// BLAKE2b-512 of the whole file on one core.
    Minisign,
}

impl FormatArg {
    fn extension(self) -> &'static str {
        match self {
            FormatArg::Paracrypt => ".psig",
            FormatArg::Sshsig => ".sig",
            FormatArg::Minisign => ".minisig",
        }
    }
}

/// The largest signature file read: its header and 2^26 leaves.
const MAX_SIGNATURE_FILE: u64 = (1 << 26) * 32 + 16 * 1024;

/// `sign -h`'s examples (and the end of `sign --help`).
macro_rules! sign_examples {
    () => {
        "\
Examples:
  paracrypt keygen --kind ed25519 -o me.pem --public-out me.pub
  paracrypt sign -k me.pem big.tar                # writes big.tar.psig
  paracrypt sign --recursive -k me.pem dataset    # writes dataset.psig"
    };
}

/// `verify -h`'s examples (and the end of `verify --help`).
macro_rules! verify_examples {
    () => {
        "\
Examples:
  paracrypt verify --public me.pub big.tar        # big.tar against big.tar.psig
  paracrypt verify -k my.key big.tar.pcr          # every chunk, nothing written
  paracrypt verify --recursive -k tree.key photos.enc"
    };
}

/// Arguments of `paracrypt sign`.
#[derive(Debug, Args)]
#[command(after_help = sign_examples!(), after_long_help = concat!("\
Signs FILE with a detached signature over a tree hash of its chunks: every chunk is hashed with \
BLAKE3 on its own thread, so signing runs on every core, and the signature file (FILE.psig by \
default) lists each chunk's hash so that any byte range can be verified alone (`paracrypt verify \
--range`). Keys: Ed25519 (`paracrypt keygen --kind ed25519`, `openssl genpkey -algorithm ed25519`, \
or an unencrypted OpenSSH key from `ssh-keygen -t ed25519`), ML-DSA-65, post-quantum (`paracrypt \
keygen --kind ml-dsa-65`), ECDSA P-256 (`paracrypt ecdsa keygen`) and RSA (`paracrypt rsa \
keygen`). The format is specified in docs/SIGNATURES.md.

With --recursive, FILE is a plaintext directory tree: every file is hashed on every core (1 MiB \
chunks) and one signature covers a manifest of the whole tree (each path, kind, mode, time, \
size and BLAKE3 root), written unencrypted to SIG (default: DIR.psig, beside DIR; never inside \
DIR). Later, `verify --recursive -s SIG DIR` names every file added, removed, renamed or \
changed (docs/guide/trees.md).

Exit status: 0 success, 1 failure, 2 usage error.

", sign_examples!()))]
pub struct SignArgs {
    /// The private key: Ed25519, ML-DSA-65, ECDSA P-256, RSA or OpenSSH Ed25519.
    ///
    /// PEM or DER; an OpenSSH Ed25519 key unencrypted. `--key` is the same flag.
    #[arg(short = 'k', long = "key-file", alias = "key", value_name = "KEY")]
    key: PathBuf,
    /// Where to write the signature (default: FILE.psig; `-` for stdout).
    #[arg(short, long, value_name = "SIG", help_heading = heading::OUTPUT)]
    output: Option<PathBuf>,
    /// Replace an existing signature file.
    #[arg(short, long, help_heading = heading::OUTPUT)]
    force: bool,
    /// paracrypt (the default: FILE.psig), sshsig (FILE.sig) or minisign (FILE.minisig).
    ///
    /// paracrypt's tree hash is hashed on every core and checks any byte range alone; an
    /// SSHSIG is what `ssh-keygen -Y verify` checks, a minisign signature what `minisign -V`
    /// checks (Ed25519 keys; hashed on one core).
    #[arg(long, value_enum, default_value_t = FormatArg::Paracrypt, help_heading = heading::FORMAT, hide_possible_values = true, hide_default_value = true)]
    format: FormatArg,
    /// The SSHSIG namespace (`ssh-keygen -Y … -n`).
    #[arg(short, long, value_name = "NAMESPACE", default_value = "file", help_heading = heading::FORMAT, hide_short_help = true)]
    namespace: String,
    /// Bytes per chunk of the tree hash (the signature stores it).
    ///
    /// A multiple of 16, at most 1GiB (4096, 64KiB, 1MiB, 1MB).
    #[arg(long, value_name = "SIZE", value_parser = parse_chunk_size, default_value_t = ChunkSize::DEFAULT, help_heading = heading::FORMAT, hide_short_help = true)]
    chunk_size: ChunkSize,
    /// FILE is a directory: one signature over a manifest of its files.
    ///
    /// FILE is a plaintext directory: every file is hashed on every core and one signature
    /// covers a manifest of the whole tree, written to SIG (default: DIR.psig, beside DIR;
    /// never inside DIR).
    #[arg(long, help_heading = heading::TREES)]
    recursive: bool,
    #[command(flatten)]
    threads: ThreadsFlag,
    #[command(flatten)]
    distributed: DistributedFlags,
    /// The RSA signature scheme, for an RSA key.
    #[arg(long, value_name = "SCHEME", default_value_t = RsaScheme::Pkcs1v15, help_heading = heading::EXPERT, hide_short_help = true)]
    rsa_scheme: RsaScheme,
    /// The file to sign (`-`: stdin, which needs -o); with --recursive, a directory.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Arguments of `paracrypt verify`.
#[derive(Debug, Args)]
#[command(after_help = verify_examples!(), after_long_help = concat!("\
Verifies FILE against its detached signature (FILE.psig by default) and the signer's public key: \
prints `FILE: OK` and exits 0, or says what failed on one line and exits 5 (the first altered \
chunk and its bytes, a length other than the signed one, another signer, a damaged signature). \
--range OFFSET:LENGTH hashes only the chunks that cover those bytes (`1GiB:4096`, `0:1MiB`).

With a secret (-k KEY, -i ID, --password-file, --kms), or without --public PUB, FILE is an \
encrypted file (a paracrypt container or an age file) checked without decrypting it anywhere: every \
chunk is decrypted into nothing and authenticated, and the file's end checked (a cut file fails); \
nothing is written. A password comes from --password-file, else PARACRYPT_PASSWORD, else a \
prompt. --verify-with PUB then requires a signed container's signer; --range checks only the \
chunks that cover those bytes. It prints `FILE: OK`, or one line and exits 1 (a damaged chunk, \
named; a cut file; a wrong key) or 5 (not signed by PUB). Only --public PUB without a secret makes \
it the check of a detached signature.

With --recursive, FILE is an encrypted tree (`encrypt --recursive`), opened with its key, password \
or identities: every file its manifest lists is decrypted into nothing and checked, and every \
difference is one line on stdout (added, removed, renamed, changed); with PATH... only those \
files of the tree are checked. --public PUB (or --verify-with) then requires the manifest's signer. \
With --recursive and -s SIG, FILE is a plaintext tree and SIG its signature (`sign --recursive`): \
every file is hashed and compared, each difference one line as above; --public PUB requires the \
signer. Only -s makes it the plaintext check (a directory without a manifest is not taken \
for a plaintext tree).

Exit status: 0 verified, 1 failure (unreadable input, malformed signature file; a tree that \
differs from its manifest), 2 usage error, 5 not verified.

", verify_examples!()))]
pub struct VerifyArgs {
    /// The signer's public key (a private key gives its public half).
    ///
    /// Ed25519 (SPKI PEM or DER, or an `ssh-ed25519 AAAA…` line), ML-DSA-65 (SPKI PEM or
    /// DER), ECDSA P-256 or RSA (SPKI or PKCS#1). Without a secret: the detached signature's
    /// signer. With a secret (an encrypted file) or --recursive: optional, the signer the file
    /// or the tree's manifest must have. `-p PUB` still means this in this release, with a
    /// warning.
    #[arg(long, visible_alias = "verify-with", value_name = "PUB")]
    public: Option<PathBuf>,
    /// The key file of an encrypted file, or of a tree with --recursive.
    #[arg(short = 'k', long, value_name = "FILE", help_heading = heading::SECRET)]
    key_file: Option<PathBuf>,
    /// The password of an encrypted file or tree: FILE's first line.
    ///
    /// Else PARACRYPT_PASSWORD, else a prompt.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "key_file",
        help_heading = heading::SECRET
    )]
    password_file: Option<PathBuf>,
    #[command(flatten)]
    identities: IdentityFlags,
    /// The signature file (default: FILE.psig).
    #[arg(short, long, value_name = "SIG")]
    signature: Option<PathBuf>,
    /// Only bytes OFFSET..OFFSET+LENGTH; `OFFSET:` to the end.
    ///
    /// Hashes only the chunks that cover them (needs a regular file). Sizes as 4096, 1MiB, 1MB.
    #[arg(long, value_name = "OFFSET:LENGTH")]
    range: Option<String>,
    /// paracrypt (the default: FILE.psig), sshsig (FILE.sig) or minisign (FILE.minisig).
    ///
    /// An SSHSIG from `ssh-keygen -Y sign` or `paracrypt sign --format sshsig`; a minisign
    /// signature from `minisign -S` or `paracrypt sign --format minisign`.
    #[arg(long, value_enum, default_value_t = FormatArg::Paracrypt, help_heading = heading::FORMAT, hide_possible_values = true, hide_default_value = true)]
    format: FormatArg,
    /// The SSHSIG namespace the signature must have.
    #[arg(short, long, value_name = "NAMESPACE", default_value = "file", help_heading = heading::FORMAT, hide_short_help = true)]
    namespace: String,
    /// FILE is a tree: an encrypted one, or with -s SIG a plaintext one.
    ///
    /// FILE is an encrypted tree (`encrypt --recursive`): every file its manifest lists is
    /// checked, with the tree's key, password or identities. With -s SIG, FILE is a plaintext
    /// tree checked against its signature (`sign --recursive`).
    #[arg(long, help_heading = heading::TREES)]
    recursive: bool,
    #[command(flatten)]
    threads: ThreadsFlag,
    /// The signed file (`-`: stdin, which needs -s), or the encrypted file checked with its
    /// secret; with --recursive, the encrypted tree.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// With --recursive: check only these files of the tree (paths in the tree, as
    /// `decrypt --recursive` restores them).
    #[arg(value_name = "PATH", requires = "recursive")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    verbose: crate::flags::VerboseFlag,
    /// With --recursive: JSON lines on stdout, a file's each, then a summary.
    ///
    /// One object per file, then one summary object (a stable shape: docs/guide/trees.md).
    #[arg(long, requires = "recursive", help_heading = heading::TREES, hide_short_help = true)]
    json: bool,
}

/// `FILE.psig` (or `FILE.sig` for an SSHSIG).
fn default_signature(file: &Path, format: FormatArg) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(format.extension());
    PathBuf::from(name)
}

/// Runs `paracrypt sign`.
pub fn run_sign(args: SignArgs, provider: Provider) -> Result<ExitCode> {
    if args.recursive {
        return sign_tree(args, provider);
    }
    let output = match (&args.output, args.file.as_path() == Path::new("-")) {
        (Some(output), _) => output.clone(),
        (None, true) => return usage("signing stdin (`-`) needs -o SIG"),
        (None, false) => default_signature(&args.file, args.format),
    };
    if args.format != FormatArg::Paracrypt && args.distributed.distributed {
        return usage("SSHSIG and minisign hash the whole file on one core: drop --distributed");
    }
    if args.distributed.distributed {
        let (path, scheme) = (args.key.clone(), args.rsa_scheme);
        let job = crate::run::distributed::SignJob {
            input: args.file,
            output,
            force: args.force,
            threads: args.threads,
            chunk_size: args.chunk_size,
            key: Box::new(move || {
                Ok(paracrypt_core::sign::SigningKey::read(&path, scheme)?
                    .with_provider(provider)?)
            }),
        };
        return crate::run::distributed::sign(args.distributed, provider, job);
    }
    let key = paracrypt_core::sign::SigningKey::read(&args.key, args.rsa_scheme)?
        .with_provider(provider)?;
    let policy = OutputPolicy {
        force: args.force,
        binary: true,
        ..OutputPolicy::default()
    };
    let target = OutputTarget::new(&output, &args.file, policy)?;
    let mut input = Input::open(&args.file)?;
    let runner = Runner::new().provider(provider);
    let pool = args.threads.pool()?;
    let bytes = match args.format {
        FormatArg::Paracrypt => pool
            .install(|| match input.as_file() {
                Some(file) => Signature::sign_file(&runner, &key, args.chunk_size, file),
                None => Signature::sign_stream(&runner, &key, args.chunk_size, &mut input.reader()),
            })
            .map(|signature| signature.to_bytes()),
        FormatArg::Sshsig => {
            sshsig::sign(&key, &args.namespace, &mut input.reader()).map(String::into_bytes)
        }
        FormatArg::Minisign => {
            let seconds = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let name = args.file.file_name().map_or_else(
                || "-".into(),
                |name| name.to_string_lossy().replace(['\n', '\r', '\t'], " "),
            );
            let trusted = format!("timestamp:{seconds}\tfile:{name}\thashed");
            minisign::sign(&key, &trusted, &mut input.reader()).map(String::into_bytes)
        }
    };
    let bytes = bytes.with_context(|| format!("cannot sign {}", args.file.display()))?;
    let mut out = target.create()?;
    out.writer()
        .write_all(&bytes)
        .context("writing the signature")?;
    out.commit()?;
    input.consumed();
    Ok(ExitCode::SUCCESS)
}

/// Runs `paracrypt verify`.
pub fn run_verify(args: VerifyArgs, provider: Provider) -> Result<ExitCode> {
    if args.recursive {
        return verify_tree(args, provider);
    }
    let secret_given =
        args.key_file.is_some() || args.password_file.is_some() || !args.identities.is_empty();
    let Some(public_path) = args.public.clone().filter(|_| !secret_given) else {
        return verify_encrypted(args, secret_given, provider);
    };
    let sig_path = match (&args.signature, args.file.as_path() == Path::new("-")) {
        (Some(path), _) => path.clone(),
        (None, true) => return usage("verifying stdin (`-`) needs -s SIG"),
        (None, false) => default_signature(&args.file, args.format),
    };
    let range = args
        .range
        .as_deref()
        .map(paracrypt_core::size::parse_range)
        .transpose()
        .context("--range")?;
    let mut input = Input::open(&args.file)?;
    if range.is_some() && input.as_file().is_none() {
        return usage("--range needs a regular file (it is read with positional reads)");
    }
    let public = paracrypt_core::sign::VerifyingKey::read(&public_path)?.with_provider(provider)?;
    let name = args.file.display();
    if args.format != FormatArg::Paracrypt {
        if range.is_some() {
            return usage(
                "SSHSIG and minisign cover the whole file: --range needs paracrypt's format",
            );
        }
        let text = read_limited(&sig_path, sshsig::MAX_ARMORED as u64)?;
        let mut reader = input.reader();
        let comment = match args.format {
            FormatArg::Sshsig => {
                sshsig::verify(&text, &public, &args.namespace, &mut reader).map(|()| None)
            }
            _ => minisign::verify(&text, &public, &mut reader).map(Some),
        };
        let comment = comment.with_context(|| format!("{name}"))?;
        let mut stdout = std::io::stdout().lock();
        match comment {
            Some(comment) => writeln!(stdout, "{name}: OK (trusted comment: {comment})"),
            None => writeln!(stdout, "{name}: OK"),
        }
        .context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    let signature = read_signature(&sig_path)?;
    let runner = Runner::new().provider(provider);
    let pool = args.threads.pool()?;
    let verified = pool.install(|| match (input.as_file(), range) {
        (Some(file), None) => signature.verify_file(&runner, &public, file).map(|()| None),
        (Some(file), Some((offset, len))) => signature
            .verify_range(&runner, &public, file, offset, len)
            .map(Some),
        (None, None) => signature
            .verify_stream(&runner, &public, &mut input.reader())
            .map(|()| None),
        (None, Some(_)) => unreachable!("a range of a stream was refused above"),
    });
    let chunks = verified.with_context(|| format!("{name}"))?;
    let mut stdout = std::io::stdout().lock();
    match chunks {
        None => writeln!(stdout, "{name}: OK"),
        Some(chunks) => writeln!(
            stdout,
            "{name}: OK (chunks {}..{} of {})",
            chunks.start,
            chunks.end,
            signature.chunks()
        ),
    }
    .context("writing to stdout")?;
    if range.is_none() {
        input.consumed();
    }
    Ok(ExitCode::SUCCESS)
}

/// `verify` of one encrypted file (a secret given, or no --public PUB): decrypted into nothing by the
/// core (`Request::verify_file`); `FILE: OK` on stdout.
fn verify_encrypted(args: VerifyArgs, secret_given: bool, provider: Provider) -> Result<ExitCode> {
    let needs = "verify needs the signer's public key (--public PUB) to check a detached signature, or \
                 the secret that decrypts an encrypted file (-k, -i, --password-file, --kms)";
    if args.file == Path::new("-") {
        if secret_given {
            return usage(
                "an encrypted file is verified from a file, not stdin (`decrypt - -o /dev/null` \
                 checks a stream)",
            );
        }
        return usage(needs);
    }
    if args.signature.is_some() || args.format != FormatArg::Paracrypt {
        return usage(
            "-s SIG and --format check a detached signature (with --public PUB and no secret): an \
             encrypted file is checked with its secret alone",
        );
    }
    let range = args
        .range
        .as_deref()
        .map(paracrypt_core::size::parse_range)
        .transpose()
        .context("--range")?;
    let file = paracrypt_core::request::open_input(&args.file)?;
    let head = paracrypt_core::request::head_of(&file)?;
    drop(file);
    // No secret and no signer's key: only an encrypted file is checked (with a password).
    if !secret_given && !paracrypt_core::request::is_encrypted(&head) {
        return usage(needs);
    }
    let secret = SecretArgs {
        key_file: args.key_file,
        password_file: args.password_file,
    };
    let operation = Operation::decrypt("verify", secret, args.identities, range, args.public)?;
    let request = operation.request(true)?;
    let runner = Runner::new().provider(provider);
    let name = args.file.display();
    let verified = args
        .threads
        .pool()?
        .install(|| request.verify_file(&runner, &args.file, range))
        .with_context(|| format!("{name}"))?;
    if let Some(signer) = &verified.signer {
        let note = if signer.required {
            signer.note()
        } else {
            format!(
                "every chunk is signed by {} (not checked against a key you trust: give it with \
                 --verify-with PUB)",
                signer.key.fingerprint()
            )
        };
        crate::exit::say!("paracrypt: {note}");
    }
    let mut stdout = std::io::stdout().lock();
    match range {
        None => writeln!(stdout, "{name}: OK"),
        Some((offset, _)) => writeln!(
            stdout,
            "{name}: OK (bytes {offset}..{})",
            offset + verified.bytes
        ),
    }
    .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `sign --recursive`: one signature over the manifest of a plaintext tree, written to SIG
/// (`DIR.psig` beside DIR by default; a prefix's, where `-o` says) as one file's signature is.
fn sign_tree(args: SignArgs, provider: Provider) -> Result<ExitCode> {
    if args.distributed.distributed || args.format != FormatArg::Paracrypt {
        return usage("--recursive signs a tree on this machine's cores, in paracrypt's format");
    }
    if args.chunk_size != ChunkSize::DEFAULT {
        return usage("--recursive hashes every file in 1 MiB chunks: drop --chunk-size");
    }
    if args.file == Path::new("-") {
        return usage("--recursive needs a directory");
    }
    let prefix = crate::io::remote::is_url(&args.file);
    // `DIR/` names DIR: its signature goes beside it, not inside.
    let dir = if prefix {
        args.file.clone()
    } else {
        args.file.components().as_path().to_path_buf()
    };
    let output = paracrypt_core::tree::signature_path(&dir, args.output.as_deref(), prefix)?;
    // A prefix is listed once, before the key is read.
    let tree_in = prefix
        .then(|| crate::io::remote::plain_input(&dir))
        .transpose()?;
    let key = paracrypt_core::sign::SigningKey::read(&args.key, args.rsa_scheme)?
        .with_provider(provider)?;
    let policy = OutputPolicy {
        force: args.force,
        binary: true,
        ..OutputPolicy::default()
    };
    let target = OutputTarget::new(&output, &dir, policy)?;
    let runner = Runner::new().provider(provider);
    let signed = args.threads.pool()?.install(|| match &tree_in {
        Some(tree_in) => paracrypt_core::tree::sign_from(&runner, &key, &**tree_in),
        None => paracrypt_core::tree::sign(&runner, &key, &dir),
    })?;
    let mut out = target.create()?;
    out.writer()
        .write_all(&signed.bytes)
        .context("writing the signature")?;
    out.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// `verify --recursive -s SIG`: a plaintext tree against its signed manifest.
fn verify_signed_tree(args: VerifyArgs, sig: &Path, provider: Provider) -> Result<ExitCode> {
    if args.range.is_some()
        || args.format != FormatArg::Paracrypt
        || args.key_file.is_some()
        || args.password_file.is_some()
        || !args.identities.is_empty()
    {
        return usage(
            "-s SIG checks a plaintext tree against its signature: it takes no -k, --password-file, \
             -i, --range or --format",
        );
    }
    let prefix = crate::io::remote::is_url(&args.file);
    let dir = if prefix {
        args.file.clone()
    } else {
        args.file.components().as_path().to_path_buf()
    };
    if !prefix && !dir.is_dir() {
        return usage(format!(
            "--recursive needs a directory: {} is not one",
            dir.display()
        ));
    }
    let expected = args
        .public
        .as_deref()
        .map(paracrypt_core::sign::VerifyingKey::read)
        .transpose()?;
    let signature = read_limited(sig, paracrypt_core::tree::manifest::MAX_MANIFEST)?;
    let paths: Vec<Vec<u8>> = args
        .paths
        .iter()
        .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
        .collect();
    let tree_in = prefix
        .then(|| crate::io::remote::plain_input(&dir))
        .transpose()?;
    let runner = Runner::new().provider(provider);
    let checked = args.threads.pool()?.install(|| match &tree_in {
        Some(tree_in) => paracrypt_core::tree::verify_signed_from(
            &runner,
            &signature,
            &**tree_in,
            expected.as_ref(),
            &paths,
        ),
        None => paracrypt_core::tree::verify_signed(
            &runner,
            &signature,
            &dir,
            expected.as_ref(),
            &paths,
        ),
    });
    let checked = checked.with_context(|| format!("{}", sig.display()))?;
    let mut out = std::io::stdout().lock();
    for change in &checked.changes {
        writeln!(out, "{change}").context("writing to stdout")?;
    }
    let name = dir.display();
    if let Some(why) = checked.why_not_intact() {
        out.flush().context("writing to stdout")?;
        crate::exit::say!("paracrypt: error: {name}: {why}");
        return Ok(ExitCode::from(1));
    }
    let s = if checked.files == 1 { "" } else { "s" };
    let signer = checked.signer.key.fingerprint();
    let signed = if checked.signer.required {
        format!("good signature by {signer}")
    } else {
        format!(
            "signed by {signer}, not checked against a key you trust: give it with --public PUB"
        )
    };
    let what = if paths.is_empty() {
        "every file as signed, nothing else"
    } else {
        "as signed"
    };
    writeln!(
        out,
        "{name}: OK ({} file{s}, {} bytes, {what}; {signed}; signed at {})",
        checked.files,
        checked.bytes,
        crate::run::tree::date_text(checked.manifest.written, None)
    )
    .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `verify --recursive`: an encrypted tree against its manifest.
fn verify_tree(args: VerifyArgs, provider: Provider) -> Result<ExitCode> {
    if let Some(sig) = args.signature.clone() {
        if args.json || args.verbose.verbose {
            return usage(
                "-v and --json list the files of an encrypted tree: not with -s SIG (a plaintext \
                 tree's signature)",
            );
        }
        return verify_signed_tree(args, &sig, provider);
    }
    if args.range.is_some() || args.format != FormatArg::Paracrypt {
        return usage(
            "an encrypted tree's signature is in its manifest: --recursive takes no --range or \
             --format (-s SIG checks a plaintext tree against its signature)",
        );
    }
    if let Some(public) = &args.public {
        // `-p` was --public here and is --password-file in encrypt and decrypt: a password
        // file given as the signer's key gets the way.
        paracrypt_core::sign::VerifyingKey::read(public).map_err(|error| {
            if error.kind() != paracrypt_core::ErrorKind::Usage {
                return anyhow::Error::from(error);
            }
            Hinted {
                error,
                hint: "--public (verify's -p) is the signer's public key; the tree's password \
                       file is --password-file FILE"
                    .into(),
            }
            .into()
        })?;
    }
    let secret = SecretArgs {
        key_file: args.key_file,
        password_file: args.password_file,
    };
    let operation =
        Operation::decrypt("verify a tree", secret, args.identities, None, args.public)?;
    let paths = args
        .paths
        .iter()
        .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
        .collect();
    let report = crate::run::tree::Report {
        verbose: args.verbose.verbose,
        json: args.json,
        dry_run: false,
    };
    crate::run::tree::verify(&args.file, operation, paths, args.threads, provider, report)
}

/// Reads a small file whole, refusing one larger than `max` bytes.
fn read_limited(path: &Path, max: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read signature {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read signature {}", path.display()))?;
    if bytes.len() as u64 > max {
        anyhow::bail!("{}: not a signature (too large)", path.display());
    }
    Ok(bytes)
}

/// Reads a signature file, refusing one larger than any signature.
fn read_signature(path: &Path) -> Result<Signature> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read signature {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_SIGNATURE_FILE {
        anyhow::bail!(
            "{}: not a paracrypt signature (larger than any signature file)",
            path.display()
        );
    }
    Signature::read(&mut file).with_context(|| format!("{}", path.display()))
}
