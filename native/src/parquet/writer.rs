//! The file and its pages: page headers, zstd, column-chunk metadata and the footer (`FileMetaData`),
//! with the buffers and zstd context a thread keeps between chunks. The column encoders that fill
//! the pages are in `columns.rs`.

use super::schema::{write_schema_element, Element, CODEC_ZSTD, E_PLAIN, E_RLE, E_RLE_DICTIONARY};
use super::thrift::{Thrift, CT_BINARY, CT_I32, CT_STRUCT};

// ---------------------------------------------------------------- column chunks

struct ChunkMeta {
    path: Vec<&'static str>,
    physical: i32,
    dictionary: bool,
    num_values: i64,
    uncompressed: i64,
    compressed: i64,
    data_page_offset: i64,
    dictionary_page_offset: Option<i64>,
    stats: Option<Stats>,
}

pub(super) struct Stats {
    pub(super) null_count: i64,
    pub(super) min: Vec<u8>,
    pub(super) max: Vec<u8>,
}

/// Buffers and the zstd context kept per thread between chunks (no page faults on fresh memory).
struct Scratch {
    compressor: zstd::bulk::Compressor<'static>,
    compressed: Vec<u8>,
    pool: Vec<Vec<u8>>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

pub(super) struct Writer {
    pub(super) out: Vec<u8>,
    chunks: Vec<ChunkMeta>,
    scratch: Scratch,
    pub(super) rows: usize,
    pending_dictionary: bool,
    groups: Vec<(usize, Vec<ChunkMeta>)>,
}

impl Writer {
    pub(super) fn begin_group(&mut self, rows: usize) {
        self.rows = rows;
    }

    pub(super) fn end_group(&mut self) {
        let chunks = std::mem::take(&mut self.chunks);
        self.groups.push((self.rows, chunks));
    }

    pub(super) fn new(rows: usize) -> std::io::Result<Self> {
        let mut out = Vec::with_capacity(1 << 20);
        out.extend_from_slice(b"PAR1");
        let scratch = match SCRATCH.with(|cell| cell.borrow_mut().take()) {
            Some(scratch) => scratch,
            None => Scratch {
                compressor: zstd::bulk::Compressor::new(1)?,
                compressed: Vec::new(),
                pool: Vec::new(),
            },
        };
        Ok(Writer {
            out,
            chunks: Vec::new(),
            scratch,
            rows,
            pending_dictionary: false,
            groups: Vec::new(),
        })
    }

    pub(super) fn buffer(&mut self) -> Vec<u8> {
        self.scratch.pool.pop().unwrap_or_default()
    }

    pub(super) fn give(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        self.scratch.pool.push(buffer);
    }

    /// Compress and append one page; returns (offset, uncompressed with header, compressed with header).
    ///
    /// A page header counts in i32: a page beyond 2 GiB (one column of a row group, say attributes of
    /// many huge values) is refused, never written with wrapped sizes; the caller then writes the chunk
    /// with pyarrow, which cuts pages at 1 MB.
    fn page(
        &mut self,
        dictionary: bool,
        num_values: usize,
        body: &[u8],
    ) -> std::io::Result<(i64, i64, i64)> {
        let limit = i32::MAX as usize;
        if body.len() > limit
            || num_values > limit
            || zstd::zstd_safe::compress_bound(body.len()) > limit
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a Parquet page beyond 2 GiB",
            ));
        }
        let mut compressed = std::mem::take(&mut self.scratch.compressed);
        compressed.clear();
        compressed.reserve(zstd::zstd_safe::compress_bound(body.len()));
        self.scratch
            .compressor
            .compress_to_buffer(body, &mut compressed)?;
        let mut t = Thrift::new();
        t.i32(1, if dictionary { 2 } else { 0 });
        t.i32(2, body.len() as i32);
        t.i32(3, compressed.len() as i32);
        if dictionary {
            t.begin(7);
            t.i32(1, num_values as i32);
            t.i32(2, E_PLAIN);
            t.end();
        } else {
            t.begin(5);
            t.i32(1, num_values as i32);
            t.i32(
                2,
                if self.pending_dictionary {
                    E_RLE_DICTIONARY
                } else {
                    E_PLAIN
                },
            );
            t.i32(3, E_RLE);
            t.i32(4, E_RLE);
            t.end();
        }
        t.out.push(0);
        let offset = self.out.len() as i64;
        self.out.extend_from_slice(&t.out);
        self.out.extend_from_slice(&compressed);
        let sizes = (
            offset,
            (t.out.len() + body.len()) as i64,
            (t.out.len() + compressed.len()) as i64,
        );
        self.scratch.compressed = compressed;
        Ok(sizes)
    }

    /// Append a column chunk: its dictionary page if any, then its one data page.
    pub(crate) fn chunk(
        &mut self,
        path: Vec<&'static str>,
        physical: i32,
        dictionary_page: Option<(usize, Vec<u8>)>,
        num_values: usize,
        body: Vec<u8>,
        stats: Option<Stats>,
    ) -> std::io::Result<()> {
        let mut uncompressed = 0;
        let mut compressed = 0;
        let mut dictionary_page_offset = None;
        self.pending_dictionary = dictionary_page.is_some();
        if let Some((entries, dictionary)) = &dictionary_page {
            let (offset, u, c) = self.page(true, *entries, dictionary)?;
            dictionary_page_offset = Some(offset);
            uncompressed += u;
            compressed += c;
        }
        let (data_page_offset, u, c) = self.page(false, num_values, &body)?;
        self.give(body);
        uncompressed += u;
        compressed += c;
        self.chunks.push(ChunkMeta {
            path,
            physical,
            dictionary: dictionary_page.is_some(),
            num_values: num_values as i64,
            uncompressed,
            compressed,
            data_page_offset,
            dictionary_page_offset,
            stats,
        });
        Ok(())
    }

    pub(super) fn finish(mut self, schema: &[Element]) -> Vec<u8> {
        let mut t = Thrift::new();
        t.i32(1, 2);
        t.list(2, CT_STRUCT, schema.len());
        for e in schema {
            write_schema_element(&mut t, e);
        }
        t.i64(3, self.groups.iter().map(|g| g.0 as i64).sum());
        t.list(4, CT_STRUCT, self.groups.len());
        for (ordinal, (rows, chunks)) in self.groups.iter().enumerate() {
            t.begin_element();
            t.list(1, CT_STRUCT, chunks.len());
            let mut total_uncompressed = 0;
            let mut total_compressed = 0;
            for chunk in chunks {
                total_uncompressed += chunk.uncompressed;
                total_compressed += chunk.compressed;
                let start = chunk
                    .dictionary_page_offset
                    .unwrap_or(chunk.data_page_offset);
                t.begin_element();
                t.i64(2, start);
                t.begin(3);
                t.i32(1, chunk.physical);
                if chunk.dictionary {
                    t.list(2, CT_I32, 3);
                    for e in [E_PLAIN, E_RLE, E_RLE_DICTIONARY] {
                        t.element_i32(e);
                    }
                } else {
                    t.list(2, CT_I32, 2);
                    for e in [E_RLE, E_PLAIN] {
                        t.element_i32(e);
                    }
                }
                t.list(3, CT_BINARY, chunk.path.len());
                for part in &chunk.path {
                    t.element_binary(part.as_bytes());
                }
                t.i32(4, CODEC_ZSTD);
                t.i64(5, chunk.num_values);
                t.i64(6, chunk.uncompressed);
                t.i64(7, chunk.compressed);
                t.i64(9, chunk.data_page_offset);
                if let Some(offset) = chunk.dictionary_page_offset {
                    t.i64(11, offset);
                }
                if let Some(stats) = &chunk.stats {
                    t.begin(12);
                    if !stats.min.is_empty() {
                        t.binary(1, &stats.max);
                        t.binary(2, &stats.min);
                    }
                    t.i64(3, stats.null_count);
                    if !stats.min.is_empty() {
                        t.binary(5, &stats.max);
                        t.binary(6, &stats.min);
                        t.bool(7, true);
                        t.bool(8, true);
                    }
                    t.end();
                }
                // encoding_stats: every data page dictionary-encoded or not (readers' dictionary filtering)
                let pages: &[(i32, i32)] = if chunk.dictionary {
                    &[(2, E_PLAIN), (0, E_RLE_DICTIONARY)]
                } else {
                    &[(0, E_PLAIN)]
                };
                t.list(13, CT_STRUCT, pages.len());
                for &(page_type, encoding) in pages {
                    t.begin_element();
                    t.i32(1, page_type);
                    t.i32(2, encoding);
                    t.i32(3, 1);
                    t.end();
                }
                t.end();
                t.end();
            }
            let first = chunks.first().map_or(4, |c| {
                c.dictionary_page_offset.unwrap_or(c.data_page_offset)
            });
            t.i64(2, total_uncompressed);
            t.i64(3, *rows as i64);
            t.i64(5, first);
            t.i64(6, total_compressed);
            t.field(7, 4); // i16 ordinal
            t.varint(Thrift::zigzag(ordinal as i64));
            t.end();
        }
        t.binary(6, b"kip714-native version 0.1.0");
        let leaves = self.groups.first().map_or(0, |g| g.1.len());
        t.list(7, CT_STRUCT, leaves);
        for _ in 0..leaves {
            t.begin_element();
            t.begin(1);
            t.end();
            t.end();
        }
        t.out.push(0);
        let footer = t.out;
        self.out.extend_from_slice(&footer);
        self.out
            .extend_from_slice(&(footer.len() as u32).to_le_bytes());
        self.out.extend_from_slice(b"PAR1");
        let scratch = std::mem::take(&mut self.scratch.pool);
        SCRATCH.with(|cell| {
            *cell.borrow_mut() = Some(Scratch {
                compressor: std::mem::take(&mut self.scratch.compressor),
                compressed: std::mem::take(&mut self.scratch.compressed),
                pool: scratch,
            })
        });
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_beyond_two_gib_is_refused_not_wrapped() {
        let mut writer = Writer::new(0).expect("writer");
        let refused = writer
            .page(false, i32::MAX as usize + 1, b"x")
            .expect_err("refused");
        assert_eq!(refused.to_string(), "a Parquet page beyond 2 GiB");
        assert!(writer.page(false, 1, b"x").is_ok());
    }
}
