//! A part's Parquet structure checked against itself, independently of its checksum
//! file: the footer and every page header are in the canonical Thrift compact encoding
//! of the structures `parquet.thrift` defines ([`crate::dataset::strict_thrift`]), the
//! pages of each column chunk follow each other exactly to its end, the footer's counts
//! and offsets agree with each other and with the pages they point at, and every page
//! decompresses to the size its header says. A file whose checksum was recomputed
//! after its bytes changed (a disk corrupted under a tool that re-sums, a careless
//! copy) is then still refused when the common Parquet readers (pyarrow, polars,
//! DuckDB) would refuse it; the values themselves are decoded and compared with their
//! digest by [`crate::dataset::verify::check_part`].

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageReader};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::schema::types::ColumnDescriptor;

use crate::dataset::strict_thrift::{self, ThriftError, Value, FILE_META_DATA, PAGE_HEADER};

const MAGIC: &[u8; 4] = b"PAR1";

/// What is wrong with a part's Parquet structure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StructureError {
    #[error("not framed by the Parquet magic `PAR1`")]
    Magic,
    #[error("footer length {footer} is past the file's {file} bytes")]
    FooterLength { footer: u32, file: usize },
    #[error("the footer's Thrift encoding: {0}")]
    Footer(ThriftError),
    #[error("row group {group}: column `{column}`: the page header at byte {offset}: {error}")]
    PageHeader {
        group: usize,
        column: String,
        offset: usize,
        error: ThriftError,
    },
    #[error("row group {group}: column `{column}`: the page at byte {offset}: {what}")]
    Page {
        group: usize,
        column: String,
        offset: usize,
        what: String,
    },
    /// The footer's values disagree with each other or with the pages.
    #[error("{0}")]
    Inconsistent(String),
}

/// `Ok` when `bytes`, a whole Parquet file, is consistent with its own footer; else
/// what is not.
pub fn check_structure(bytes: &[u8]) -> Result<(), StructureError> {
    let n = bytes.len();
    if n < 12 || &bytes[..4] != MAGIC || &bytes[n - 4..] != MAGIC {
        return Err(StructureError::Magic);
    }
    let footer_len = u32::from_le_bytes([bytes[n - 8], bytes[n - 7], bytes[n - 6], bytes[n - 5]]);
    let footer_start = (n - 8)
        .checked_sub(footer_len as usize)
        .filter(|&s| s >= 4)
        .ok_or(StructureError::FooterLength {
            footer: footer_len,
            file: n,
        })?;
    let footer = strict_thrift::decode_exact(&bytes[footer_start..n - 8], &FILE_META_DATA)
        .map_err(StructureError::Footer)?;
    let leaves = leaves(&footer);
    for (group, rg) in footer.list(4).iter().enumerate() {
        for (j, cc) in rg.list(1).iter().enumerate() {
            let meta = cc.field(3);
            let column = meta
                .map(|m| {
                    let parts: Vec<String> = m
                        .list(3)
                        .iter()
                        .map(|p| match p {
                            Value::Binary(b) => String::from_utf8_lossy(b).into_owned(),
                            _ => String::new(),
                        })
                        .collect();
                    parts.join(".")
                })
                .unwrap_or_else(|| format!("#{j}"));
            let fail = |offset: usize, what: Walk| match what {
                Walk::Header(error) => StructureError::PageHeader {
                    group,
                    column: column.clone(),
                    offset,
                    error,
                },
                Walk::Page(what) => StructureError::Page {
                    group,
                    column: column.clone(),
                    offset,
                    what,
                },
            };
            let chunk = |what: String| {
                StructureError::Inconsistent(format!(
                    "row group {group}: column `{column}`: {what}"
                ))
            };
            let (Some(meta), Some(leaf)) = (meta, leaves.get(j)) else {
                return Err(chunk("no column metadata, or no schema leaf for it".into()));
            };
            let int = |id: i16| meta.int(id).unwrap_or(-1);
            if int(1) != leaf.physical {
                return Err(chunk(format!(
                    "the chunk holds physical type {}, the schema says {}",
                    int(1),
                    leaf.physical
                )));
            }
            if let Some(stats) = meta.field(12) {
                check_statistics(stats, leaf).map_err(chunk)?;
            }
            if let Some(sizes) = meta.field(16) {
                check_size_statistics(sizes, leaf).map_err(chunk)?;
            }
            let start = meta.int(11).unwrap_or_else(|| int(9));
            let end = start.checked_add(int(7)).unwrap_or(-1);
            if start < 4 || end <= start || end as u64 > footer_start as u64 {
                return Err(chunk(format!(
                    "its bytes {start}..{end} are not inside the file's data (4..{footer_start})"
                )));
            }
            let uncompressed = walk_pages(bytes, start as usize, end as usize, int(4), leaf)
                .map_err(|(at, w)| fail(at, w))?;
            if uncompressed != int(6) {
                return Err(chunk(format!(
                    "its pages take {uncompressed} bytes uncompressed, the footer says {}",
                    int(6)
                )));
            }
        }
    }
    check_values(bytes, footer_start).map_err(StructureError::Inconsistent)
}

/// What the schema says of a column (a leaf of the schema tree).
struct Leaf {
    physical: i64,
    /// Its largest repetition and definition levels: the REPEATED, and the not REQUIRED,
    /// elements on its path below the root.
    max_rep: i64,
    max_def: i64,
    /// The byte width of a value, where the type fixes one.
    width: Option<usize>,
    /// Text: a BYTE_ARRAY annotated UTF8 / STRING.
    text: bool,
}

/// The leaves of the footer's schema (its elements without children), in column order,
/// with the levels their paths give them (the elements are the tree depth first, each
/// group followed by its `num_children` children).
fn leaves(footer: &Value) -> Vec<Leaf> {
    let elements = footer.list(2);
    let mut out = Vec::new();
    // Per open group: children still to come, and the levels of its path.
    let mut open: Vec<(i64, i64, i64)> = Vec::new();
    for (k, e) in elements.iter().enumerate() {
        let (rep, def) = open.last().map_or((0, 0), |&(_, r, d)| (r, d));
        if let Some(top) = open.last_mut() {
            top.0 -= 1;
        }
        // The root's repetition does not count.
        let (rep, def) = match (k, e.int(3)) {
            (0, _) => (0, 0),
            (_, Some(2)) => (rep + 1, def + 1),
            (_, Some(1)) => (rep, def + 1),
            _ => (rep, def),
        };
        match e.int(5) {
            Some(children) if children > 0 => open.push((children, rep, def)),
            _ if e.field(1).is_some() => out.push(leaf(e, rep, def)),
            _ => {}
        }
        while open.last().is_some_and(|&(left, _, _)| left <= 0) {
            open.pop();
        }
    }
    out
}

fn leaf(e: &Value, max_rep: i64, max_def: i64) -> Leaf {
    let physical = e.int(1).unwrap_or(-1);
    let width = match physical {
        0 => Some(1),
        1 | 4 => Some(4),
        2 | 5 => Some(8),
        3 => Some(12),
        7 => e.int(2).and_then(|w| usize::try_from(w).ok()),
        _ => None,
    };
    let string_logical = e.field(10).is_some_and(|l| l.field(1).is_some());
    Leaf {
        physical,
        max_rep,
        max_def,
        width,
        text: physical == 6 && (e.int(6) == Some(0) || string_logical),
    }
}

/// Level histograms of one bucket per level, 0 to the column's largest (the C++ readers
/// refuse others).
fn check_size_statistics(sizes: &Value, leaf: &Leaf) -> Result<(), String> {
    for (id, name, max) in [
        (2, "repetition", leaf.max_rep),
        (3, "definition", leaf.max_def),
    ] {
        let n = sizes.list(id).len() as i64;
        if sizes.field(id).is_some() && n != max + 1 {
            return Err(format!(
                "its {name} level histogram has {n} buckets, its levels 0..={max} need {}",
                max + 1
            ));
        }
    }
    Ok(())
}

/// Statistics whose bounds have the width of their column's type (text, UTF-8) and
/// whose counts are not negative: the C++ readers refuse others.
fn check_statistics(stats: &Value, leaf: &Leaf) -> Result<(), String> {
    for (id, name) in [(1, "max"), (2, "min"), (5, "max_value"), (6, "min_value")] {
        let Some(b) = stats.binary(id) else { continue };
        if leaf.width.is_some_and(|w| w != b.len()) {
            return Err(format!(
                "its statistics' {name} is {} bytes, its type's values {}",
                b.len(),
                leaf.width.unwrap_or(0)
            ));
        }
        if leaf.text && std::str::from_utf8(b).is_err() {
            return Err(format!("its statistics' {name} is not UTF-8"));
        }
    }
    for (id, name) in [(3, "null_count"), (4, "distinct_count"), (9, "nan_count")] {
        if stats.int(id).is_some_and(|c| c < 0) {
            return Err(format!("its statistics' {name} is negative"));
        }
    }
    Ok(())
}

/// An unsigned LEB128 varint at the start of `b` (a Snappy stream's length).
fn leb128(b: &[u8]) -> Option<u64> {
    let mut x: u64 = 0;
    for (k, &byte) in b.iter().take(5).enumerate() {
        x |= u64::from(byte & 0x7f) << (7 * k);
        if byte & 0x80 == 0 {
            return Some(x);
        }
    }
    None
}

/// The footer's counts and offsets against each other and against the pages, every
/// page read and decompressed by the parquet crate's page reader.
/// `Ok` when `bytes`, a whole Parquet file, is consistent with its own footer; else
/// what is not.
fn check_values(bytes: &[u8], footer_start: usize) -> Result<(), String> {
    let footer_start = footer_start as u64;
    let reader = SerializedFileReader::new(Bytes::copy_from_slice(bytes))
        .map_err(|e| format!("footer: {e}"))?;
    let meta = reader.metadata();
    let schema = meta.file_metadata().schema_descr();
    let mut total_rows: i64 = 0;
    let mut chunks: Vec<(u64, u64)> = Vec::new();
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let at = |what: String| format!("row group {g}: {what}");
        if rg.num_rows() < 0 {
            return Err(at(format!("{} rows", rg.num_rows())));
        }
        total_rows += rg.num_rows();
        if rg.num_columns() != schema.num_columns() {
            return Err(at(format!(
                "{} column chunks, the schema has {} columns",
                rg.num_columns(),
                schema.num_columns()
            )));
        }
        let mut uncompressed: i64 = 0;
        let group = reader.get_row_group(g).map_err(|e| at(e.to_string()))?;
        for (j, cc) in rg.columns().iter().enumerate() {
            let col = schema.column(j);
            let at = |what: String| at(format!("column `{}`: {what}", col.path()));
            if cc.column_path() != col.path() {
                return Err(at(format!("the chunk names `{}`", cc.column_path())));
            }
            if cc.column_type() != col.physical_type() {
                return Err(at(format!(
                    "the chunk holds {}, the schema says {}",
                    cc.column_type(),
                    col.physical_type()
                )));
            }
            if !matches!(
                cc.compression(),
                Compression::SNAPPY | Compression::UNCOMPRESSED
            ) {
                return Err(at(format!("compression {}", cc.compression())));
            }
            let start = cc.dictionary_page_offset().unwrap_or(cc.data_page_offset());
            let size = cc.compressed_size();
            let end = start.checked_add(size).unwrap_or(i64::MAX);
            if start < 4
                || size <= 0
                || cc.data_page_offset() < start
                || cc.data_page_offset() >= end
                || end as u64 > footer_start
            {
                return Err(at(format!(
                    "bytes {start}..{end} (data from {}) are not inside the file's data \
                     (4..{footer_start})",
                    cc.data_page_offset()
                )));
            }
            chunks.push((start as u64, end as u64));
            uncompressed += cc.uncompressed_size();
            let levels = page_values(
                group
                    .get_column_page_reader(j)
                    .map_err(|e| at(e.to_string()))?,
                &col,
            )
            .map_err(at)?;
            if levels != cc.num_values() {
                return Err(at(format!(
                    "its pages hold {levels} values, the footer says {}",
                    cc.num_values()
                )));
            }
            if col.max_rep_level() == 0 && levels != rg.num_rows() {
                return Err(at(format!(
                    "{levels} values in a group of {} rows",
                    rg.num_rows()
                )));
            }
        }
        if rg.total_byte_size() != uncompressed {
            return Err(at(format!(
                "total size {} bytes, its column chunks {uncompressed}",
                rg.total_byte_size()
            )));
        }
    }
    if total_rows != meta.file_metadata().num_rows() {
        return Err(format!(
            "the row groups hold {total_rows} rows, the footer says {}",
            meta.file_metadata().num_rows()
        ));
    }
    chunks.sort_unstable();
    if chunks.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err("two column chunks overlap".into());
    }
    Ok(())
}

/// The values (levels) of a column chunk's data pages, every page read and
/// decompressed; a dictionary page only first, holding as many plain values as its
/// header says; data pages in known encodings, with repetition and definition levels
/// that stay within the column's maxima.
fn page_values(mut pages: Box<dyn PageReader>, col: &ColumnDescriptor) -> Result<i64, String> {
    let mut values: i64 = 0;
    let mut first = true;
    while let Some(page) = pages.get_next_page().map_err(|e| e.to_string())? {
        let known = |e: Encoding| {
            matches!(
                e,
                Encoding::PLAIN
                    | Encoding::RLE
                    | Encoding::RLE_DICTIONARY
                    | Encoding::PLAIN_DICTIONARY
                    | Encoding::DELTA_BINARY_PACKED
                    | Encoding::DELTA_LENGTH_BYTE_ARRAY
                    | Encoding::DELTA_BYTE_ARRAY
                    | Encoding::BYTE_STREAM_SPLIT
            )
        };
        let (max_rep, max_def) = (col.max_rep_level(), col.max_def_level());
        match &page {
            Page::DictionaryPage {
                encoding,
                buf,
                num_values,
                ..
            } => {
                if !first || !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    return Err(format!("a dictionary page ({encoding}) where none fits"));
                }
                let held = plain_values(buf, col).ok_or_else(|| {
                    "a dictionary page that is not whole plain values".to_string()
                })?;
                if held != u64::from(*num_values) {
                    return Err(format!(
                        "a dictionary page of {held} values, its header says {num_values}"
                    ));
                }
            }
            Page::DataPage {
                encoding,
                def_level_encoding,
                rep_level_encoding,
                buf,
                num_values,
                ..
            } => {
                for e in [*encoding, *def_level_encoding, *rep_level_encoding] {
                    if !known(e) {
                        return Err(format!("a data page in encoding {e}"));
                    }
                }
                let mut rest: &[u8] = buf;
                for (max, encoding, what) in [
                    (max_rep, rep_level_encoding, "repetition"),
                    (max_def, def_level_encoding, "definition"),
                ] {
                    if max == 0 {
                        continue;
                    }
                    if *encoding != Encoding::RLE {
                        return Err(format!("{what} levels in encoding {encoding}"));
                    }
                    let len = rest
                        .get(..4)
                        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                        .filter(|&l| l <= rest.len() - 4)
                        .ok_or_else(|| format!("{what} levels past the page's end"))?;
                    check_levels(&rest[4..4 + len], max, *num_values as usize)
                        .map_err(|e| format!("{what} levels: {e}"))?;
                    rest = &rest[4 + len..];
                }
            }
            Page::DataPageV2 {
                encoding,
                buf,
                num_values,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                if !known(*encoding) {
                    return Err(format!("a data page in encoding {encoding}"));
                }
                let (r, d) = (*rep_levels_byte_len as usize, *def_levels_byte_len as usize);
                let levels = buf
                    .get(..r.saturating_add(d))
                    .ok_or_else(|| "levels past the page's end".to_string())?;
                for (max, b, what) in [
                    (max_rep, &levels[..r], "repetition"),
                    (max_def, &levels[r..], "definition"),
                ] {
                    if max > 0 {
                        check_levels(b, max, *num_values as usize)
                            .map_err(|e| format!("{what} levels: {e}"))?;
                    }
                }
            }
        }
        if page.is_data_page() {
            values += i64::from(page.num_values());
        }
        first = false;
    }
    Ok(values)
}

/// How many plain-encoded values of `col`'s type `buf` holds, if it is whole values.
fn plain_values(buf: &[u8], col: &ColumnDescriptor) -> Option<u64> {
    let width = match col.physical_type() {
        PhysicalType::BYTE_ARRAY => {
            let (mut at, mut n) = (0usize, 0u64);
            while at < buf.len() {
                let len = buf.get(at..at + 4)?;
                let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
                at = (at + 4).checked_add(len).filter(|&e| e <= buf.len())?;
                n += 1;
            }
            return Some(n);
        }
        PhysicalType::BOOLEAN => return None,
        PhysicalType::INT32 | PhysicalType::FLOAT => 4,
        PhysicalType::INT64 | PhysicalType::DOUBLE => 8,
        PhysicalType::INT96 => 12,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => usize::try_from(col.type_length()).ok()?,
    };
    (width > 0 && buf.len() % width == 0).then_some((buf.len() / width) as u64)
}

/// Levels in the RLE / bit-packed hybrid encoding: `count` of them, each at most
/// `max`, taking every byte of `b` (the last bit-packed group padded, as written).
fn check_levels(b: &[u8], max: i16, count: usize) -> Result<(), String> {
    let bits = 16 - (max as u16).leading_zeros() as usize;
    let run_bytes = bits.div_ceil(8);
    let (mut at, mut seen) = (0usize, 0usize);
    while seen < count {
        let mut header: u64 = 0;
        let mut shift = 0;
        loop {
            let x = *b.get(at).ok_or("they end early")?;
            at += 1;
            if shift > 28 {
                return Err("a run header past 32 bits".into());
            }
            header |= u64::from(x & 0x7f) << shift;
            shift += 7;
            if x & 0x80 == 0 {
                break;
            }
        }
        let n = (header >> 1) as usize;
        if header & 1 == 1 {
            // n groups of 8 values, `bits` bytes each.
            let len = n.checked_mul(bits).ok_or("a run past any page")?;
            let group = b
                .get(at..at + len)
                .ok_or("a bit-packed run past their end")?;
            let values = (n * 8).min(count - seen);
            for k in 0..values {
                let mut v: u32 = 0;
                for i in 0..bits {
                    let bit = k * bits + i;
                    v |= u32::from((group[bit / 8] >> (bit % 8)) & 1) << i;
                }
                if v > max as u32 {
                    return Err(format!("level {v} above the column's {max}"));
                }
            }
            if n == 0 || n * 8 - values >= 8 {
                return Err(format!(
                    "a bit-packed run of {n} groups for {values} levels"
                ));
            }
            at += len;
            seen += values;
        } else {
            let v = b.get(at..at + run_bytes).ok_or("a run past their end")?;
            let v = v
                .iter()
                .rev()
                .fold(0u32, |acc, &x| (acc << 8) | u32::from(x));
            if v > max as u32 {
                return Err(format!("level {v} above the column's {max}"));
            }
            if n == 0 || n > count - seen {
                return Err(format!("a run of {n} levels where {} remain", count - seen));
            }
            at += run_bytes;
            seen += n;
        }
    }
    if at != b.len() {
        return Err(format!("{} bytes after the last level", b.len() - at));
    }
    Ok(())
}

/// What is wrong with a page of a column chunk.
enum Walk {
    Header(ThriftError),
    Page(String),
}

const CODEC_UNCOMPRESSED: i64 = 0;
const CODEC_SNAPPY: i64 = 1;

/// The pages of the column chunk at `start..end` of `bytes`, each a header in the
/// canonical encoding followed by its compressed bytes, one after the other to exactly
/// `end`: a dictionary page only first, each header with its page type's own
/// sub-header alone, sound statistics, and compressed bytes that say (Snappy) or are
/// (uncompressed) the size the header gives. The bytes the pages take uncompressed
/// (headers included, as the footer counts them); on error, the byte offset of the
/// page and what is wrong.
fn walk_pages(
    bytes: &[u8],
    start: usize,
    end: usize,
    codec: i64,
    leaf: &Leaf,
) -> Result<i64, (usize, Walk)> {
    let mut at = start;
    let mut first = true;
    let mut uncompressed_total: i64 = 0;
    while at < end {
        let here = |w: Walk| (at, w);
        let page = |what: String| (at, Walk::Page(what));
        let (header, len) = strict_thrift::decode_prefix(&bytes[at..end], &PAGE_HEADER)
            .map_err(|e| here(Walk::Header(e)))?;
        let kind = header.int(1).unwrap_or(-1);
        let subs: Vec<i16> = header
            .ids()
            .into_iter()
            .filter(|id| (5..=8).contains(id))
            .collect();
        // A data page (v1 or v2) or a dictionary page with its own sub-header; metachron
        // writes no index page.
        let expected = match kind {
            0 => 5,
            2 => 7,
            3 => 8,
            _ => return Err(page(format!("a page of type {kind}"))),
        };
        if subs != [expected] {
            return Err(page(format!(
                "a page of type {kind} with the sub-headers (fields) {subs:?}, not [{expected}]"
            )));
        }
        if kind == 2 && !first {
            return Err(page("a dictionary page after the first".into()));
        }
        let sub = header.field(expected);
        if let Some(stats) = sub.and_then(|h| h.field(if kind == 3 { 8 } else { 5 })) {
            if kind != 2 {
                check_statistics(stats, leaf).map_err(page)?;
            }
        }
        let size = |id: i16| header.int(id).filter(|&s| s >= 0);
        let (Some(uncompressed), Some(compressed)) = (size(2), size(3)) else {
            return Err(page(format!(
                "page sizes {:?} (uncompressed) and {:?} (compressed)",
                header.int(2),
                header.int(3)
            )));
        };
        let body = at + len;
        let next = body
            .checked_add(compressed as usize)
            .filter(|&e| e <= end)
            .ok_or_else(|| {
                page(format!(
                    "its {compressed} bytes run past the column chunk's end at byte {end}"
                ))
            })?;
        // A v2 page's levels come first, never compressed.
        let (levels, compressed_body) = match (kind, sub) {
            (3, Some(v2)) => {
                let l = v2.int(5).unwrap_or(-1).max(-1) + v2.int(6).unwrap_or(-1).max(-1);
                if l < 0 || l > compressed.min(uncompressed) {
                    return Err(page(format!("levels of {l} bytes")));
                }
                (l, v2.field(7) != Some(&Value::Bool(false)))
            }
            _ => (0, true),
        };
        match codec {
            CODEC_UNCOMPRESSED if compressed != uncompressed => {
                return Err(page(format!(
                    "{compressed} bytes, uncompressed, and the header says {uncompressed}"
                )));
            }
            CODEC_SNAPPY if compressed_body => {
                let stream = &bytes[body + levels as usize..next];
                let said = leb128(stream);
                if said != Some((uncompressed - levels) as u64) {
                    return Err(page(format!(
                        "its Snappy stream holds {said:?} bytes, the header says {}",
                        uncompressed - levels
                    )));
                }
            }
            _ => {}
        }
        uncompressed_total = uncompressed_total
            .checked_add(len as i64 + uncompressed)
            .ok_or_else(|| page("sizes past any file".into()))?;
        at = next;
        first = false;
    }
    Ok(uncompressed_total)
}
