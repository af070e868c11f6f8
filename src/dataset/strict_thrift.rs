//! A strict reader of the Thrift compact encoding of a Parquet footer (`FileMetaData`)
//! and page headers (`PageHeader`): it accepts only the canonical encoding of the
//! structures `parquet.thrift` defines, the one the parquet crate's writer produces.
//!
//! The parquet crate's own decoder is lenient where the C++ (pyarrow, DuckDB) and
//! polars decoders are not: it skips unknown fields and page statistics, and takes
//! some wrongly typed fields. A bit flipped in a footer or a page header can thus
//! leave a file that the Rust reader reads and the others refuse. This reader refuses
//! unknown field ids, wrong field or element types, fields out of order or twice,
//! varints longer than needed or out of their type's range, enum values outside
//! their enum, unions with other than one member, missing required fields, text that
//! is not UTF-8 and bytes left over; it returns the decoded tree for value checks.

/// The wire types of the compact protocol (the low nibble of a field header).
const T_BOOL_TRUE: u8 = 1;
const T_BOOL_FALSE: u8 = 2;
const T_I8: u8 = 3;
const T_I16: u8 = 4;
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_DOUBLE: u8 = 7;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_STRUCT: u8 = 12;

/// Nesting deeper than any Parquet structure needs.
const MAX_DEPTH: usize = 16;

/// What is wrong with an encoding, at a byte offset from the start of the structure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThriftError {
    #[error("byte {at}: the encoding ends inside {within}")]
    Truncated { at: usize, within: String },
    #[error("byte {at}: {within} has no field {id}")]
    UnknownField {
        at: usize,
        within: &'static str,
        id: i64,
    },
    #[error("byte {at}: {within}.{field} is encoded as wire type {found}, not {expected}")]
    FieldType {
        at: usize,
        within: &'static str,
        field: &'static str,
        found: u8,
        expected: u8,
    },
    #[error("byte {at}: {within}.{field} comes after field {previous} (fields go once, in order)")]
    Order {
        at: usize,
        within: &'static str,
        field: &'static str,
        previous: i16,
    },
    #[error("byte {at}: {what} is not in its shortest encoding")]
    NotCanonical { at: usize, what: String },
    #[error("byte {at}: {what} = {value} is out of range")]
    Range { at: usize, what: String, value: i64 },
    #[error("byte {at}: {within} lacks its required field {field}")]
    Missing {
        at: usize,
        within: &'static str,
        field: &'static str,
    },
    #[error("byte {at}: the union {within} sets {count} members, not one")]
    Union {
        at: usize,
        within: &'static str,
        count: usize,
    },
    #[error("byte {at}: {what} is not UTF-8")]
    Utf8 { at: usize, what: String },
    #[error("byte {at}: nested deeper than {MAX_DEPTH} structures")]
    Depth { at: usize },
    #[error("{extra} bytes follow the {within}")]
    Trailing { within: &'static str, extra: usize },
}

/// The type of a field or list element.
#[derive(Debug)]
pub enum Ty {
    Bool,
    I8,
    I16,
    I32,
    I64,
    Double,
    Binary,
    /// Binary that must be UTF-8.
    Text,
    /// An i32 whose values are those listed.
    Enum(&'static [i32]),
    List(&'static Ty),
    Struct(&'static Struct),
}

impl Ty {
    fn wire(&self) -> u8 {
        match self {
            Ty::Bool => T_BOOL_TRUE,
            Ty::I8 => T_I8,
            Ty::I16 => T_I16,
            Ty::I32 | Ty::Enum(_) => T_I32,
            Ty::I64 => T_I64,
            Ty::Double => T_DOUBLE,
            Ty::Binary | Ty::Text => T_BINARY,
            Ty::List(_) => T_LIST,
            Ty::Struct(_) => T_STRUCT,
        }
    }
}

#[derive(Debug)]
pub struct Field {
    pub id: i16,
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
}

#[derive(Debug)]
pub struct Struct {
    pub name: &'static str,
    pub fields: &'static [Field],
    /// A union: exactly one field is set.
    pub union: bool,
}

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Bool(bool),
    Int(i64),
    Double(f64),
    Binary(&'a [u8]),
    List(Vec<Value<'a>>),
    /// The fields set, by id, in order.
    Struct(Vec<(i16, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// Field `id` of a struct.
    pub fn field(&self, id: i16) -> Option<&Value<'a>> {
        match self {
            Value::Struct(fields) => fields.iter().find(|(i, _)| *i == id).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn int(&self, id: i16) -> Option<i64> {
        match self.field(id)? {
            Value::Int(x) => Some(*x),
            _ => None,
        }
    }

    pub fn list(&self, id: i16) -> &[Value<'a>] {
        match self.field(id) {
            Some(Value::List(v)) => v,
            _ => &[],
        }
    }

    pub fn binary(&self, id: i16) -> Option<&'a [u8]> {
        match self.field(id)? {
            Value::Binary(b) => Some(*b),
            _ => None,
        }
    }

    /// The ids of the fields set.
    pub fn ids(&self) -> Vec<i16> {
        match self {
            Value::Struct(fields) => fields.iter().map(|(i, _)| *i).collect(),
            _ => Vec::new(),
        }
    }
}

/// Decode `bytes` as exactly one `def`: every byte belongs to it.
pub fn decode_exact<'a>(bytes: &'a [u8], def: &'static Struct) -> Result<Value<'a>, ThriftError> {
    let (v, used) = decode_prefix(bytes, def)?;
    if used != bytes.len() {
        return Err(ThriftError::Trailing {
            within: def.name,
            extra: bytes.len() - used,
        });
    }
    Ok(v)
}

/// Decode one `def` at the start of `bytes`: the value and how many bytes it took.
pub fn decode_prefix<'a>(
    bytes: &'a [u8],
    def: &'static Struct,
) -> Result<(Value<'a>, usize), ThriftError> {
    let mut r = Reader { b: bytes, at: 0 };
    let v = r.structure(def, 0)?;
    Ok((v, r.at))
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self, within: &str) -> Result<u8, ThriftError> {
        let x = *self.b.get(self.at).ok_or_else(|| ThriftError::Truncated {
            at: self.at,
            within: within.to_string(),
        })?;
        self.at += 1;
        Ok(x)
    }

    /// An unsigned LEB128 varint of at most `max_bits`, in its shortest form.
    fn varint(&mut self, what: &str, max_bits: u32) -> Result<u64, ThriftError> {
        let start = self.at;
        let mut x: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.byte(what)?;
            let beyond = u64::from(b & 0x7f)
                .checked_shr(max_bits.saturating_sub(shift))
                .unwrap_or(0);
            if shift >= max_bits || beyond != 0 {
                return Err(ThriftError::Range {
                    at: start,
                    what: what.to_string(),
                    value: x as i64,
                });
            }
            x |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && shift > 0 {
                    return Err(ThriftError::NotCanonical {
                        at: start,
                        what: what.to_string(),
                    });
                }
                return Ok(x);
            }
            shift += 7;
        }
    }

    /// A zigzag varint of a signed type of `bits` bits.
    fn zigzag(&mut self, what: &str, bits: u32) -> Result<i64, ThriftError> {
        let u = self.varint(what, bits)?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    fn structure(&mut self, def: &'static Struct, depth: usize) -> Result<Value<'a>, ThriftError> {
        if depth > MAX_DEPTH {
            return Err(ThriftError::Depth { at: self.at });
        }
        let start = self.at;
        let mut set: Vec<(i16, Value<'a>)> = Vec::new();
        let mut last: i16 = 0;
        loop {
            let at = self.at;
            let h = self.byte(def.name)?;
            if h == 0 {
                break;
            }
            let (wire, delta) = (h & 0x0f, h >> 4);
            let id = if delta != 0 {
                i64::from(last) + i64::from(delta)
            } else {
                let id = self.zigzag(&format!("a field id of {}", def.name), 16)?;
                if id > i64::from(last) && id - i64::from(last) <= 15 {
                    return Err(ThriftError::NotCanonical {
                        at,
                        what: format!("the header of {}'s field {id}", def.name),
                    });
                }
                id
            };
            let field = def.fields.iter().find(|f| i64::from(f.id) == id).ok_or(
                ThriftError::UnknownField {
                    at,
                    within: def.name,
                    id,
                },
            )?;
            if field.id <= last {
                return Err(ThriftError::Order {
                    at,
                    within: def.name,
                    field: field.name,
                    previous: last,
                });
            }
            let wrong = ThriftError::FieldType {
                at,
                within: def.name,
                field: field.name,
                found: wire,
                expected: field.ty.wire(),
            };
            let value = match (&field.ty, wire) {
                (Ty::Bool, T_BOOL_TRUE) => Value::Bool(true),
                (Ty::Bool, T_BOOL_FALSE) => Value::Bool(false),
                (Ty::Bool, _) => return Err(wrong),
                (ty, w) if w == ty.wire() => self.value(ty, def.name, field.name, depth)?,
                _ => return Err(wrong),
            };
            set.push((field.id, value));
            last = field.id;
        }
        if def.union {
            if set.len() != 1 {
                return Err(ThriftError::Union {
                    at: start,
                    within: def.name,
                    count: set.len(),
                });
            }
        } else if let Some(f) = def
            .fields
            .iter()
            .find(|f| f.required && !set.iter().any(|(id, _)| *id == f.id))
        {
            return Err(ThriftError::Missing {
                at: start,
                within: def.name,
                field: f.name,
            });
        }
        Ok(Value::Struct(set))
    }

    /// A value of `ty` (not a bool field, whose value is in its header).
    fn value(
        &mut self,
        ty: &'static Ty,
        within: &'static str,
        field: &'static str,
        depth: usize,
    ) -> Result<Value<'a>, ThriftError> {
        let what = || format!("{within}.{field}");
        let at = self.at;
        Ok(match ty {
            Ty::Bool => match self.byte(&what())? {
                1 => Value::Bool(true),
                2 => Value::Bool(false),
                x => {
                    return Err(ThriftError::Range {
                        at,
                        what: what(),
                        value: i64::from(x),
                    })
                }
            },
            Ty::I8 => Value::Int(i64::from(self.byte(&what())? as i8)),
            Ty::I16 => Value::Int(self.zigzag(&what(), 16)?),
            Ty::I32 => Value::Int(self.zigzag(&what(), 32)?),
            Ty::I64 => Value::Int(self.zigzag(&what(), 64)?),
            Ty::Enum(values) => {
                let x = self.zigzag(&what(), 32)?;
                if !values.iter().any(|&v| i64::from(v) == x) {
                    return Err(ThriftError::Range {
                        at,
                        what: what(),
                        value: x,
                    });
                }
                Value::Int(x)
            }
            Ty::Double => {
                let end = self.at + 8;
                let b = self
                    .b
                    .get(self.at..end)
                    .ok_or(ThriftError::Truncated { at, within: what() })?;
                self.at = end;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Double(f64::from_le_bytes(a))
            }
            Ty::Binary | Ty::Text => {
                let n = self.varint(&format!("the length of {}", what()), 31)? as usize;
                let start = self.at;
                let b = self
                    .b
                    .get(start..start + n)
                    .ok_or(ThriftError::Truncated { at, within: what() })?;
                if matches!(ty, Ty::Text) && std::str::from_utf8(b).is_err() {
                    return Err(ThriftError::Utf8 { at, what: what() });
                }
                self.at = start + n;
                Value::Binary(b)
            }
            Ty::List(elem) => {
                let h = self.byte(&what())?;
                let (short, wire) = ((h >> 4) as usize, h & 0x0f);
                let n = if short == 15 {
                    let n = self.varint(&format!("the length of {}", what()), 31)? as usize;
                    if n < 15 {
                        return Err(ThriftError::NotCanonical {
                            at,
                            what: format!("the length of {}", what()),
                        });
                    }
                    n
                } else {
                    short
                };
                if wire != elem.wire() {
                    return Err(ThriftError::FieldType {
                        at,
                        within,
                        field,
                        found: wire,
                        expected: elem.wire(),
                    });
                }
                // Every element takes at least one byte.
                if n > self.b.len() - self.at {
                    return Err(ThriftError::Truncated { at, within: what() });
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(match elem {
                        Ty::Struct(def) => self.structure(def, depth + 1)?,
                        other => self.value(other, within, field, depth + 1)?,
                    });
                }
                Value::List(items)
            }
            Ty::Struct(def) => self.structure(def, depth + 1)?,
        })
    }
}

// The structures of parquet.thrift that a footer or a page header holds (encryption
// aside: metachron writes no encrypted file).

const fn req(id: i16, name: &'static str, ty: Ty) -> Field {
    Field {
        id,
        name,
        ty,
        required: true,
    }
}

const fn opt(id: i16, name: &'static str, ty: Ty) -> Field {
    Field {
        id,
        name,
        ty,
        required: false,
    }
}

const fn st(name: &'static str, fields: &'static [Field]) -> Struct {
    Struct {
        name,
        fields,
        union: false,
    }
}

const fn union(name: &'static str, fields: &'static [Field]) -> Struct {
    Struct {
        name,
        fields,
        union: true,
    }
}

const PHYSICAL_TYPE: Ty = Ty::Enum(&[0, 1, 2, 3, 4, 5, 6, 7]);
const REPETITION: Ty = Ty::Enum(&[0, 1, 2]);
const CONVERTED_TYPE: Ty = Ty::Enum(&[
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
]);
/// PLAIN, PLAIN_DICTIONARY, RLE, BIT_PACKED, DELTA_BINARY_PACKED,
/// DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, RLE_DICTIONARY, BYTE_STREAM_SPLIT.
pub const ENCODING: Ty = Ty::Enum(&[0, 2, 3, 4, 5, 6, 7, 8, 9]);
const CODEC: Ty = Ty::Enum(&[0, 1, 2, 3, 4, 5, 6, 7]);
const PAGE_TYPE: Ty = Ty::Enum(&[0, 1, 2, 3]);
const EDGE_INTERPOLATION: Ty = Ty::Enum(&[0, 1, 2, 3, 4]);

static EMPTY: Struct = st("an empty struct", &[]);
static TIME_UNIT: Struct = union(
    "TimeUnit",
    &[
        opt(1, "MILLIS", Ty::Struct(&EMPTY)),
        opt(2, "MICROS", Ty::Struct(&EMPTY)),
        opt(3, "NANOS", Ty::Struct(&EMPTY)),
    ],
);
static DECIMAL_TYPE: Struct = st(
    "DecimalType",
    &[req(1, "scale", Ty::I32), req(2, "precision", Ty::I32)],
);
static TIME_TYPE: Struct = st(
    "TimeType",
    &[
        req(1, "isAdjustedToUTC", Ty::Bool),
        req(2, "unit", Ty::Struct(&TIME_UNIT)),
    ],
);
static INT_TYPE: Struct = st(
    "IntType",
    &[req(1, "bitWidth", Ty::I8), req(2, "isSigned", Ty::Bool)],
);
static VARIANT_TYPE: Struct = st("VariantType", &[opt(1, "specification_version", Ty::I8)]);
static GEOMETRY_TYPE: Struct = st("GeometryType", &[opt(1, "crs", Ty::Text)]);
static GEOGRAPHY_TYPE: Struct = st(
    "GeographyType",
    &[
        opt(1, "crs", Ty::Text),
        opt(2, "algorithm", EDGE_INTERPOLATION),
    ],
);
static LOGICAL_TYPE: Struct = union(
    "LogicalType",
    &[
        opt(1, "STRING", Ty::Struct(&EMPTY)),
        opt(2, "MAP", Ty::Struct(&EMPTY)),
        opt(3, "LIST", Ty::Struct(&EMPTY)),
        opt(4, "ENUM", Ty::Struct(&EMPTY)),
        opt(5, "DECIMAL", Ty::Struct(&DECIMAL_TYPE)),
        opt(6, "DATE", Ty::Struct(&EMPTY)),
        opt(7, "TIME", Ty::Struct(&TIME_TYPE)),
        opt(8, "TIMESTAMP", Ty::Struct(&TIME_TYPE)),
        opt(10, "INTEGER", Ty::Struct(&INT_TYPE)),
        opt(11, "UNKNOWN", Ty::Struct(&EMPTY)),
        opt(12, "JSON", Ty::Struct(&EMPTY)),
        opt(13, "BSON", Ty::Struct(&EMPTY)),
        opt(14, "UUID", Ty::Struct(&EMPTY)),
        opt(15, "FLOAT16", Ty::Struct(&EMPTY)),
        opt(16, "VARIANT", Ty::Struct(&VARIANT_TYPE)),
        opt(17, "GEOMETRY", Ty::Struct(&GEOMETRY_TYPE)),
        opt(18, "GEOGRAPHY", Ty::Struct(&GEOGRAPHY_TYPE)),
    ],
);
pub static SCHEMA_ELEMENT: Struct = st(
    "SchemaElement",
    &[
        opt(1, "type", PHYSICAL_TYPE),
        opt(2, "type_length", Ty::I32),
        opt(3, "repetition_type", REPETITION),
        req(4, "name", Ty::Text),
        opt(5, "num_children", Ty::I32),
        opt(6, "converted_type", CONVERTED_TYPE),
        opt(7, "scale", Ty::I32),
        opt(8, "precision", Ty::I32),
        opt(9, "field_id", Ty::I32),
        opt(10, "logicalType", Ty::Struct(&LOGICAL_TYPE)),
    ],
);
static KEY_VALUE: Struct = st(
    "KeyValue",
    &[req(1, "key", Ty::Text), opt(2, "value", Ty::Text)],
);
static STATISTICS: Struct = st(
    "Statistics",
    &[
        opt(1, "max", Ty::Binary),
        opt(2, "min", Ty::Binary),
        opt(3, "null_count", Ty::I64),
        opt(4, "distinct_count", Ty::I64),
        opt(5, "max_value", Ty::Binary),
        opt(6, "min_value", Ty::Binary),
        opt(7, "is_max_value_exact", Ty::Bool),
        opt(8, "is_min_value_exact", Ty::Bool),
        opt(9, "nan_count", Ty::I64),
    ],
);
static PAGE_ENCODING_STATS: Struct = st(
    "PageEncodingStats",
    &[
        req(1, "page_type", PAGE_TYPE),
        req(2, "encoding", ENCODING),
        req(3, "count", Ty::I32),
    ],
);
static SIZE_STATISTICS: Struct = st(
    "SizeStatistics",
    &[
        opt(1, "unencoded_byte_array_data_bytes", Ty::I64),
        opt(2, "repetition_level_histogram", Ty::List(&Ty::I64)),
        opt(3, "definition_level_histogram", Ty::List(&Ty::I64)),
    ],
);
static BOUNDING_BOX: Struct = st(
    "BoundingBox",
    &[
        req(1, "xmin", Ty::Double),
        req(2, "xmax", Ty::Double),
        req(3, "ymin", Ty::Double),
        req(4, "ymax", Ty::Double),
        opt(5, "zmin", Ty::Double),
        opt(6, "zmax", Ty::Double),
        opt(7, "mmin", Ty::Double),
        opt(8, "mmax", Ty::Double),
    ],
);
static GEOSPATIAL_STATISTICS: Struct = st(
    "GeospatialStatistics",
    &[
        opt(1, "bbox", Ty::Struct(&BOUNDING_BOX)),
        opt(2, "geospatial_types", Ty::List(&Ty::I32)),
    ],
);
pub static COLUMN_META_DATA: Struct = st(
    "ColumnMetaData",
    &[
        req(1, "type", PHYSICAL_TYPE),
        req(2, "encodings", Ty::List(&ENCODING)),
        req(3, "path_in_schema", Ty::List(&Ty::Text)),
        req(4, "codec", CODEC),
        req(5, "num_values", Ty::I64),
        req(6, "total_uncompressed_size", Ty::I64),
        req(7, "total_compressed_size", Ty::I64),
        opt(8, "key_value_metadata", Ty::List(&Ty::Struct(&KEY_VALUE))),
        req(9, "data_page_offset", Ty::I64),
        opt(10, "index_page_offset", Ty::I64),
        opt(11, "dictionary_page_offset", Ty::I64),
        opt(12, "statistics", Ty::Struct(&STATISTICS)),
        opt(
            13,
            "encoding_stats",
            Ty::List(&Ty::Struct(&PAGE_ENCODING_STATS)),
        ),
        opt(14, "bloom_filter_offset", Ty::I64),
        opt(15, "bloom_filter_length", Ty::I32),
        opt(16, "size_statistics", Ty::Struct(&SIZE_STATISTICS)),
        opt(
            17,
            "geospatial_statistics",
            Ty::Struct(&GEOSPATIAL_STATISTICS),
        ),
    ],
);
pub static COLUMN_CHUNK: Struct = st(
    "ColumnChunk",
    &[
        opt(1, "file_path", Ty::Text),
        req(2, "file_offset", Ty::I64),
        opt(3, "meta_data", Ty::Struct(&COLUMN_META_DATA)),
        opt(4, "offset_index_offset", Ty::I64),
        opt(5, "offset_index_length", Ty::I32),
        opt(6, "column_index_offset", Ty::I64),
        opt(7, "column_index_length", Ty::I32),
    ],
);
static SORTING_COLUMN: Struct = st(
    "SortingColumn",
    &[
        req(1, "column_idx", Ty::I32),
        req(2, "descending", Ty::Bool),
        req(3, "nulls_first", Ty::Bool),
    ],
);
pub static ROW_GROUP: Struct = st(
    "RowGroup",
    &[
        req(1, "columns", Ty::List(&Ty::Struct(&COLUMN_CHUNK))),
        req(2, "total_byte_size", Ty::I64),
        req(3, "num_rows", Ty::I64),
        opt(4, "sorting_columns", Ty::List(&Ty::Struct(&SORTING_COLUMN))),
        opt(5, "file_offset", Ty::I64),
        opt(6, "total_compressed_size", Ty::I64),
        opt(7, "ordinal", Ty::I16),
    ],
);
static COLUMN_ORDER: Struct = union(
    "ColumnOrder",
    &[
        opt(1, "TYPE_ORDER", Ty::Struct(&EMPTY)),
        opt(2, "IEEE_754_TOTAL_ORDER", Ty::Struct(&EMPTY)),
    ],
);
/// A Parquet footer.
pub static FILE_META_DATA: Struct = st(
    "FileMetaData",
    &[
        req(1, "version", Ty::I32),
        req(2, "schema", Ty::List(&Ty::Struct(&SCHEMA_ELEMENT))),
        req(3, "num_rows", Ty::I64),
        req(4, "row_groups", Ty::List(&Ty::Struct(&ROW_GROUP))),
        opt(5, "key_value_metadata", Ty::List(&Ty::Struct(&KEY_VALUE))),
        opt(6, "created_by", Ty::Text),
        opt(7, "column_orders", Ty::List(&Ty::Struct(&COLUMN_ORDER))),
    ],
);

static DATA_PAGE_HEADER: Struct = st(
    "DataPageHeader",
    &[
        req(1, "num_values", Ty::I32),
        req(2, "encoding", ENCODING),
        req(3, "definition_level_encoding", ENCODING),
        req(4, "repetition_level_encoding", ENCODING),
        opt(5, "statistics", Ty::Struct(&STATISTICS)),
    ],
);
static INDEX_PAGE_HEADER: Struct = st("IndexPageHeader", &[]);
static DICTIONARY_PAGE_HEADER: Struct = st(
    "DictionaryPageHeader",
    &[
        req(1, "num_values", Ty::I32),
        req(2, "encoding", ENCODING),
        opt(3, "is_sorted", Ty::Bool),
    ],
);
static DATA_PAGE_HEADER_V2: Struct = st(
    "DataPageHeaderV2",
    &[
        req(1, "num_values", Ty::I32),
        req(2, "num_nulls", Ty::I32),
        req(3, "num_rows", Ty::I32),
        req(4, "encoding", ENCODING),
        req(5, "definition_levels_byte_length", Ty::I32),
        req(6, "repetition_levels_byte_length", Ty::I32),
        opt(7, "is_compressed", Ty::Bool),
        opt(8, "statistics", Ty::Struct(&STATISTICS)),
    ],
);
/// A page's header.
pub static PAGE_HEADER: Struct = st(
    "PageHeader",
    &[
        req(1, "type", PAGE_TYPE),
        req(2, "uncompressed_page_size", Ty::I32),
        req(3, "compressed_page_size", Ty::I32),
        opt(4, "crc", Ty::I32),
        opt(5, "data_page_header", Ty::Struct(&DATA_PAGE_HEADER)),
        opt(6, "index_page_header", Ty::Struct(&INDEX_PAGE_HEADER)),
        opt(
            7,
            "dictionary_page_header",
            Ty::Struct(&DICTIONARY_PAGE_HEADER),
        ),
        opt(8, "data_page_header_v2", Ty::Struct(&DATA_PAGE_HEADER_V2)),
    ],
);
