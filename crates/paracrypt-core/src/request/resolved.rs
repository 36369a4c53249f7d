//! A resolved job: the recipe, and how it runs on every driver (age's armor in order).

use std::io::{Read, Write};

use super::AnyDecryptor;
use crate::agefile::{self, ArmoredStreamWriter};
use crate::error::Result;
use crate::recipe::{Recipe, Runner, StreamWriter};
use crate::sign::VerifyingKey;

/// The one job [`Request::resolve`](super::Request::resolve) chose for an input: its recipe for
/// the positional drivers ([`Runner::file`], [`Runner::vec`], [`Runner::range`], the engine's
/// and `paracrypt-mpi`'s), and the drivers that may run in order ([`Resolved::stream`],
/// [`Resolved::writer`], [`Resolved::reader`]), which put age's armor around it when the job
/// reads or writes armor.
pub struct Resolved {
    recipe: Box<dyn Recipe>,
    armor: Option<Armor>,
    serial: bool,
    /// A decryption's recipe, which records who signed what it opened.
    opened: Option<AnyDecryptor>,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("in_order", &self.in_order())
            .field("serial", &self.serial)
            .finish_non_exhaustive()
    }
}

/// age's armor, read or written around the binary form's recipe.
enum Armor {
    Write(agefile::Encryptor),
    Read(agefile::Decryptor),
}

/// Who signed a decrypted container (version 3): every chunk released was verified against
/// this key.
#[derive(Clone, Debug)]
pub struct Signer {
    /// The signer's key, as the file's header names it.
    pub key: VerifyingKey,
    /// Whether the caller required this signer (`verify_with`), or only learns it.
    pub required: bool,
}

impl Signer {
    /// One line saying who signed, for a person to read.
    pub fn note(&self) -> String {
        if self.required {
            format!(
                "good signature: every chunk is signed by {}",
                self.key.fingerprint()
            )
        } else {
            format!(
                "every chunk is signed by {} (not checked against a key you trust: require it \
                 with its public key)",
                self.key.fingerprint()
            )
        }
    }
}

impl Resolved {
    /// A job of `recipe`, any driver, in parallel.
    pub(super) fn new(recipe: impl Recipe + 'static) -> Self {
        Resolved {
            recipe: Box::new(recipe),
            armor: None,
            serial: false,
            opened: None,
        }
    }

    /// An age encryption, `armor`ed or not.
    pub(super) fn age_writer(encryptor: agefile::Encryptor, armor: bool) -> Self {
        Resolved {
            armor: armor.then(|| Armor::Write(encryptor.clone())),
            ..Resolved::new(encryptor)
        }
    }

    /// A decryption; `armored`: the input is an armored age file.
    pub(super) fn decryptor(decryptor: AnyDecryptor, armored: bool) -> Self {
        let armor = match (armored, decryptor.age()) {
            (true, Some(age)) => Some(Armor::Read(age.clone())),
            _ => None,
        };
        Resolved {
            armor,
            opened: Some(decryptor.clone()),
            ..Resolved::new(decryptor)
        }
    }

    /// Marks the job serial (CBC encryption, RC4): its chunks run in order on one thread.
    pub(super) fn serial(mut self, serial: bool) -> Self {
        self.serial = serial;
        self
    }

    /// The recipe, for the positional drivers. (A job that [`Resolved::in_order`] is run by
    /// [`Resolved::stream`], [`Resolved::writer`] or [`Resolved::reader`] instead.)
    pub fn recipe(&self) -> &dyn Recipe {
        &*self.recipe
    }

    /// Whether the job must run in order, as a stream: it reads or writes age's armor.
    pub fn in_order(&self) -> bool {
        self.armor.is_some()
    }

    /// Whether the chunks run in order on one thread (CBC encryption, RC4): parallel drivers
    /// and other processes then wait.
    pub fn is_serial(&self) -> bool {
        self.serial
    }

    /// Runs the job from a stream to a stream (armor included), with `runner`'s window: only
    /// verified chunks are written, in order. `reader` starts with the input's first bytes
    /// (the ones the job was resolved with). Returns the bytes written.
    pub fn stream(
        &self,
        runner: &Runner,
        reader: &mut (dyn Read + Send),
        writer: &mut (dyn Write + Send),
    ) -> Result<u64> {
        match &self.armor {
            Some(Armor::Write(age)) => age.encrypt_armored(runner, reader, writer),
            Some(Armor::Read(age)) => age.decrypt_armored(runner, reader, writer),
            None => runner.stream(self.recipe(), reader, writer),
        }
    }

    /// A `Write` adapter that runs the job over what is written to it into `inner` (armor
    /// included): an encryption, or a raw cipher. [`Writer::finish`] must be called.
    pub fn writer<W: Write + Send>(&self, runner: &Runner, inner: W) -> Result<Writer<W>> {
        Ok(match &self.armor {
            Some(Armor::Write(age)) => Writer(Sink::Armored(age.armored_writer(runner, inner)?)),
            _ => Writer(Sink::Plain(runner.writer(self.recipe(), inner)?)),
        })
    }

    /// A `Read` adapter that runs the job over `inner`, which starts with the input's first
    /// bytes: reading it gives the output, verified chunk by chunk (armor included). The header
    /// is read and checked here.
    pub fn reader<'a>(
        &self,
        runner: &Runner,
        inner: impl Read + Send + 'a,
    ) -> Result<Box<dyn Read + Send + 'a>> {
        Ok(match &self.armor {
            Some(Armor::Read(age)) => Box::new(age.armored_reader(runner, inner)?),
            _ => Box::new(runner.reader(self.recipe(), inner)?),
        })
    }

    /// After a decryption that succeeded: who signed the file, when it was a signed container.
    pub fn signer(&self) -> Option<Signer> {
        let opened = self.opened.as_ref()?;
        Some(Signer {
            key: opened.signer()?,
            required: opened.expects_signer(),
        })
    }
}

/// What [`Resolved::writer`] returns: a `Write` adapter. **Call [`Writer::finish`]**: it writes
/// the last chunk (and the armor's END line); without it the output reads as truncated.
pub struct Writer<W: Write>(Sink<W>);

enum Sink<W: Write> {
    Plain(StreamWriter<W>),
    Armored(ArmoredStreamWriter<W>),
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Writer").finish_non_exhaustive()
    }
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        match &mut self.0 {
            Sink::Plain(w) => w.write(data),
            Sink::Armored(w) => w.write(data),
        }
    }

    /// Writes nothing out: a chunk is transformed only once it is known whether it is the last.
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Writer<W> {
    /// Transforms and writes the last chunks (and the armor's END line); returns the inner
    /// writer.
    pub fn finish(self) -> std::io::Result<W> {
        match self.0 {
            Sink::Plain(w) => w.finish(),
            Sink::Armored(w) => w.finish(),
        }
    }
}
