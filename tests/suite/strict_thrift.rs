//! The strict reader of Parquet's Thrift compact encoding (footers and page headers):
//! the canonical encoding reads, each kind of non-canonical or foreign encoding is
//! refused with what is wrong.

use metachron::dataset::strict_thrift::{
    decode_exact, ThriftError, Value, PAGE_HEADER, SCHEMA_ELEMENT,
};

/// A data page's header as the parquet crate writes it: type DATA_PAGE, 10 bytes
/// uncompressed and compressed, 2 values, PLAIN values, RLE levels.
const PAGE: &[u8] = &[
    0x15, 0x00, // 1: type = 0
    0x15, 0x14, // 2: uncompressed_page_size = 10
    0x15, 0x14, // 3: compressed_page_size = 10
    0x2c, // 5: data_page_header
    0x15, 0x04, // 1: num_values = 2
    0x15, 0x00, // 2: encoding = PLAIN
    0x15, 0x06, // 3: definition_level_encoding = RLE
    0x15, 0x06, // 4: repetition_level_encoding = RLE
    0x00, 0x00,
];

fn page_with(edit: impl FnOnce(&mut Vec<u8>)) -> Result<(), ThriftError> {
    let mut b = PAGE.to_vec();
    edit(&mut b);
    decode_exact(&b, &PAGE_HEADER).map(|_| ())
}

#[test]
fn the_canonical_page_header_reads_with_its_values() {
    let v = decode_exact(PAGE, &PAGE_HEADER).unwrap();
    assert_eq!(v.int(2), Some(10));
    assert_eq!(v.field(5).and_then(|d| d.int(1)), Some(2));
    assert_eq!(v.ids(), vec![1, 2, 3, 5]);
}

#[test]
fn each_non_canonical_page_header_is_refused_with_why() {
    // A varint longer than needed: 10 as two bytes.
    let e = page_with(|b| {
        b.splice(3..4, [0x94, 0x00]);
    });
    assert!(
        matches!(e, Err(ThriftError::NotCanonical { at: 3, .. })),
        "{e:?}"
    );
    // A field this structure does not have: 9, after field 5.
    let e = page_with(|b| {
        b.splice(16..16, [0x45, 0x00]);
    });
    assert!(
        matches!(
            e,
            Err(ThriftError::UnknownField {
                within: "PageHeader",
                id: 9,
                ..
            })
        ),
        "{e:?}"
    );
    // The page type encoded as an i64.
    let e = page_with(|b| b[0] = 0x16);
    assert!(
        matches!(
            e,
            Err(ThriftError::FieldType {
                field: "type",
                found: 6,
                expected: 5,
                ..
            })
        ),
        "{e:?}"
    );
    // Field 2 after field 3 (the long form of a field header).
    let e = page_with(|b| {
        b.splice(2..6, [0x25, 0x14, 0x05, 0x04, 0x14]);
    });
    assert!(
        matches!(e, Err(ThriftError::Order { previous: 3, .. })),
        "{e:?}"
    );
    // Field 1 twice.
    let e = page_with(|b| {
        b.splice(2..2, [0x05, 0x02, 0x00]);
    });
    assert!(
        matches!(e, Err(ThriftError::Order { previous: 1, .. })),
        "{e:?}"
    );
    // A page type outside the enum.
    let e = page_with(|b| b[1] = 0x12);
    assert!(
        matches!(e, Err(ThriftError::Range { value: 9, .. })),
        "{e:?}"
    );
    // An encoding outside the enum (1 was GROUP_VAR_INT, never written).
    let e = page_with(|b| b[10] = 0x02);
    assert!(
        matches!(e, Err(ThriftError::Range { value: 1, .. })),
        "{e:?}"
    );
    // An i32 past 32 bits.
    let e = page_with(|b| {
        b.splice(3..4, [0xff, 0xff, 0xff, 0xff, 0x7f]);
    });
    assert!(matches!(e, Err(ThriftError::Range { .. })), "{e:?}");
    // A required field missing: uncompressed_page_size.
    let e = page_with(|b| {
        b.splice(2..6, [0x25, 0x14]);
    });
    assert!(
        matches!(
            e,
            Err(ThriftError::Missing {
                field: "uncompressed_page_size",
                ..
            })
        ),
        "{e:?}"
    );
    // A byte after the structure, and a structure cut short.
    let e = page_with(|b| b.push(0));
    assert!(
        matches!(e, Err(ThriftError::Trailing { extra: 1, .. })),
        "{e:?}"
    );
    let e = decode_exact(&PAGE[..9], &PAGE_HEADER).map(|_| ());
    assert!(matches!(e, Err(ThriftError::Truncated { .. })), "{e:?}");
}

#[test]
fn a_union_sets_exactly_one_member() {
    // A schema element named `a` whose logical type is STRING, then STRING and LIST.
    let one: &[u8] = &[0x48, 0x01, b'a', 0x6c, 0x1c, 0x00, 0x00, 0x00];
    let v = decode_exact(one, &SCHEMA_ELEMENT).unwrap();
    assert_eq!(v.binary(4), Some(&b"a"[..]));
    assert!(matches!(v.field(10), Some(Value::Struct(m)) if m.len() == 1));
    let two: &[u8] = &[0x48, 0x01, b'a', 0x6c, 0x1c, 0x00, 0x2c, 0x00, 0x00, 0x00];
    let e = decode_exact(two, &SCHEMA_ELEMENT).map(|_| ());
    assert!(
        matches!(
            e,
            Err(ThriftError::Union {
                within: "LogicalType",
                count: 2,
                ..
            })
        ),
        "{e:?}"
    );
    let none: &[u8] = &[0x48, 0x01, b'a', 0x6c, 0x00, 0x00];
    let e = decode_exact(none, &SCHEMA_ELEMENT).map(|_| ());
    assert!(
        matches!(e, Err(ThriftError::Union { count: 0, .. })),
        "{e:?}"
    );
    // A name that is not UTF-8.
    let e = decode_exact(&[0x48, 0x01, 0xff, 0x00], &SCHEMA_ELEMENT).map(|_| ());
    assert!(matches!(e, Err(ThriftError::Utf8 { .. })), "{e:?}");
}
