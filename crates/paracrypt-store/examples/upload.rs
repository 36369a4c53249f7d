//! Uploads a file's bytes as they are to an object, with the same multipart uploader, part
//! size and concurrency as `paracrypt encrypt -o s3://…` (no encryption): the baseline of
//! `scripts/s3-bench.py`.
//!
//! ```sh
//! cargo run --release -p paracrypt-store --example upload -- FILE s3://bucket/key [CONCURRENCY]
//! ```

use std::os::unix::fs::FileExt;

use paracrypt_store::{MIN_PART, Object, Options, Upload};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, file, url, rest @ ..] = &args[..] else {
        return Err("usage: upload FILE s3://bucket/key [CONCURRENCY]".into());
    };
    let mut options = Options::default();
    if let Some(n) = rest.first() {
        options.upload_concurrency = n.parse()?;
    }
    let file = std::fs::File::open(file)?;
    let len = file.metadata()?.len();
    let object = Object::open(url, options)?;
    let upload = Upload::create(&object, true)?;
    let parts = len.div_ceil(MIN_PART).max(1);
    for index in 0..parts {
        let start = index * MIN_PART;
        let mut data = vec![0u8; (len - start).min(MIN_PART) as usize];
        file.read_exact_at(&mut data, start)?;
        upload.put_part(index as usize, data)?;
    }
    upload.complete(parts as usize, &[])?;
    Ok(())
}
