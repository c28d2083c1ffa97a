//! A writer for the "new ASCII" (`newc`) cpio format the Linux kernel
//! unpacks as an initramfs (Documentation/driver-api/early-userspace/
//! buffer-format.rst): per entry a 110-byte header of the magic `070701`
//! and thirteen 8-digit hexadecimal fields, the NUL-terminated name padded
//! to a multiple of 4 bytes, then the data padded the same way; the archive
//! ends with an entry named `TRAILER!!!`. Uncompressed: the kernel accepts
//! that, and it needs no compressor.

/// An archive being built in memory.
#[derive(Default)]
pub struct Cpio {
    buf: Vec<u8>,
    ino: u32,
}

/// File type bits of `st_mode`.
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

impl Cpio {
    /// An empty archive.
    pub fn new() -> Cpio {
        Cpio::default()
    }

    /// A directory (`name` without a leading `/`).
    pub fn dir(&mut self, name: &str) {
        self.entry(name, S_IFDIR | 0o755, 2, b"");
    }

    /// A regular file with permission bits `perm` (e.g. 0o755).
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        self.entry(name, S_IFREG | (perm & 0o7777), 1, data);
    }

    /// A symbolic link `name` -> `target`.
    pub fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, S_IFLNK | 0o777, 1, target.as_bytes());
    }

    fn entry(&mut self, name: &str, mode: u32, nlink: u32, data: &[u8]) {
        self.ino += 1;
        let namesize = name.len() + 1;
        let fields = [
            self.ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime: fixed, so the archive is reproducible
            data.len() as u32,
            0, // devmajor
            0, // devminor
            0, // rdevmajor
            0, // rdevminor
            namesize as u32,
            0, // check (unused by newc)
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad4();
        self.buf.extend_from_slice(data);
        self.pad4();
    }

    fn pad4(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    /// The archive, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.ino = 0;
        self.entry("TRAILER!!!", 0, 1, b"");
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_layout() {
        let mut c = Cpio::new();
        c.file("init", 0o755, b"hi\n");
        let a = c.finish();
        // header 110 + "init\0" 5 = 115 -> padded to 116; data 3 -> 4
        assert_eq!(&a[..6], b"070701");
        assert_eq!(&a[6..14], b"00000001"); // ino
        assert_eq!(&a[14..22], b"000081ED"); // regular file, 0755
        assert_eq!(&a[54..62], b"00000003"); // filesize
        assert_eq!(&a[94..102], b"00000005"); // namesize
        assert_eq!(&a[110..115], b"init\0");
        assert_eq!(&a[116..119], b"hi\n");
        assert_eq!(&a[120..126], b"070701");
        let trailer = &a[120..];
        assert_eq!(&trailer[110..121], b"TRAILER!!!\0");
        assert_eq!(a.len() % 4, 0);
    }

    #[test]
    fn symlink_and_dir_modes() {
        let mut c = Cpio::new();
        c.dir("bin");
        c.symlink("bin/sh", "busybox");
        let a = c.finish();
        assert_eq!(&a[14..22], b"000041ED");
        let off = 116;
        assert_eq!(&a[off + 14..off + 22], b"0000A1FF");
        assert_eq!(&a[off + 54..off + 62], b"00000007");
    }
}
