//! A part's Parquet structure checked against itself, independently of its checksum
//! file: the footer's counts and offsets agree with each other and with the pages they
//! point at, and every page of every column chunk of every row group decompresses to
//! the size its header says. A file whose checksum was recomputed after its bytes
//! changed (a disk corrupted under a tool that re-sums, a careless copy) is then still
//! refused when the common Parquet readers (pyarrow, polars, DuckDB) would refuse it;
//! the values themselves are decoded and compared with their digest by
//! [`crate::dataset::verify::check_part`].

use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageReader};
use parquet::file::reader::{FileReader, SerializedFileReader};

const MAGIC: &[u8; 4] = b"PAR1";

/// `Ok` when `bytes`, a whole Parquet file, is consistent with its own footer; else
/// what is not.
pub fn check_structure(bytes: &[u8]) -> Result<(), String> {
    let n = bytes.len();
    if n < 12 || &bytes[..4] != MAGIC || &bytes[n - 4..] != MAGIC {
        return Err("not framed by the Parquet magic `PAR1`".into());
    }
    let footer_len = u32::from_le_bytes([bytes[n - 8], bytes[n - 7], bytes[n - 6], bytes[n - 5]]);
    let footer_start = (n as u64 - 8)
        .checked_sub(u64::from(footer_len))
        .filter(|&s| s >= 4)
        .ok_or_else(|| format!("footer length {footer_len} is past the file's {n} bytes"))?;
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
/// decompressed; a dictionary page only first, data pages in known encodings.
fn page_values(mut pages: Box<dyn PageReader>) -> Result<i64, String> {
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
        match &page {
            Page::DictionaryPage { encoding, .. } => {
                if !first || !known(*encoding) {
                    return Err(format!("a dictionary page ({encoding}) where none fits"));
                }
            }
            Page::DataPage {
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                for e in [*encoding, *def_level_encoding, *rep_level_encoding] {
                    if !known(e) {
                        return Err(format!("a data page in encoding {e}"));
                    }
                }
            }
            Page::DataPageV2 { encoding, .. } => {
                if !known(*encoding) {
                    return Err(format!("a data page in encoding {encoding}"));
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
