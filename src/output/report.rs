//! The atlas report: one static HTML page for a sweep dataset (what the sweep is, its
//! health, its maps, its per-combination class fractions, and an animated exemplar of
//! every class), with every picture embedded as a data URI so the page is one file a
//! colleague can open with no server. A few lines of vanilla JavaScript enlarge a
//! picture on click and say so on the page should a picture fail to decode.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use arrow_array::{Array, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};

use crate::dataset::schema::COL_COMBO;
use crate::error::OutputError;
use crate::parquet::PendingFile;
use crate::vocabulary as voc;

/// A picture of the page: a file to embed, a heading and a caption.
#[derive(Debug, Clone)]
pub struct Figure {
    pub path: PathBuf,
    pub title: String,
    pub caption: String,
}

/// One class shown by one of its runs, run again.
#[derive(Debug, Clone)]
pub struct Exemplar {
    pub class: String,
    pub heading: String,
    /// What was replayed and how it compares with the dataset row.
    pub notes: Vec<String>,
    /// (metric, value) of the run.
    pub metrics: Vec<(String, String)>,
    pub animation: Option<PathBuf>,
    pub snapshots: Vec<PathBuf>,
}

/// The table of per-combination results: a header and rows of text cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Rows left out of `rows` (the page shows at most [`MAX_TABLE_ROWS`]).
    pub omitted: usize,
}

/// Rows of the summary table shown on the page (the Parquet summary holds them all).
pub const MAX_TABLE_ROWS: usize = 2000;

/// Everything the page shows.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub title: String,
    pub description: String,
    /// (label, value) lines: dataset, version, backend, points...
    pub facts: Vec<(String, String)>,
    /// Whether `metachron check` finds the dataset complete and clean, and its words.
    pub check_ok: bool,
    pub check_lines: Vec<String>,
    /// (parameter, how it is swept, its values).
    pub axes: Vec<(String, String, String)>,
    pub sweep_text: String,
    /// The maps and the table: one section, or one per facet value.
    pub sections: Vec<Section>,
    /// The classes present in the rows shown, in the classification's order.
    pub classes: Vec<String>,
    pub exemplars: Vec<Exemplar>,
}

/// The maps and per-combination table of some of the rows: all of them, or those of
/// one facet value.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The facet value (`omega = 2`); `None` when the page has one section.
    pub heading: Option<String>,
    /// Rows the section is drawn from.
    pub rows: usize,
    pub maps: Vec<Figure>,
    pub maps_note: Option<String>,
    pub summary: Table,
}

/// RFC 4648 base64 (with padding), for data URIs.
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Text made safe for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A picture file as a data URI (PNG or GIF, by its extension).
fn data_uri(path: &Path) -> Result<String, OutputError> {
    let bytes = std::fs::read(path).map_err(|source| OutputError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mime = match path.extension().and_then(|e| e.to_str()) {
        Some("gif") => "image/gif",
        Some("png") => "image/png",
        _ => {
            return Err(OutputError::Invalid {
                path: path.display().to_string(),
                message: "a report embeds PNG and GIF pictures only".into(),
            })
        }
    };
    Ok(format!("data:{mime};base64,{}", base64(&bytes)))
}

/// The text of a summary cell: numbers to four significant places, text as is.
fn cell(a: &dyn Array, row: usize) -> String {
    let any = a.as_any();
    if a.is_null(row) {
        return String::new();
    }
    if let Some(x) = any.downcast_ref::<Float64Array>() {
        let v = x.value(row);
        return if v.is_nan() {
            "–".into()
        } else if v == v.round() && v.abs() < 1e9 {
            format!("{v}")
        } else {
            format!("{v:.4}")
        };
    }
    if let Some(x) = any.downcast_ref::<UInt64Array>() {
        return x.value(row).to_string();
    }
    if let Some(x) = any.downcast_ref::<UInt32Array>() {
        return x.value(row).to_string();
    }
    if let Some(x) = any.downcast_ref::<StringArray>() {
        return x.value(row).to_string();
    }
    String::new()
}

impl Table {
    /// The page's view of `metachron summarize`'s table: the combination, the swept
    /// parameters, the run count, and per class in `classes` its fraction with the
    /// Wilson 95 % interval as "f [lo, hi]"; where the coupling's dampers dissipated
    /// energy, per class its mean `work_coupling` with its unit.
    pub fn from_summary(batch: &RecordBatch, axes: &[String], classes: &[String]) -> Table {
        let col = |name: &str| batch.column_by_name(name);
        let float = |name: &str, r: usize| {
            col(name).and_then(|a| {
                a.as_any()
                    .downcast_ref::<Float64Array>()
                    .map(|x| x.value(r))
            })
        };
        let dissipation = |c: &String| voc::class_mean(voc::metric::work_coupling, c);
        let damped = classes.iter().any(|c| {
            (0..batch.num_rows()).any(|r| float(&dissipation(c), r).is_some_and(|x| x > 0.0))
        });
        let mut header = vec![COL_COMBO.to_string()];
        header.extend(axes.iter().cloned());
        header.push("runs".into());
        for c in classes {
            header.push(format!("{c} [95 % interval]"));
        }
        if damped {
            let unit = voc::metric_named(voc::metric::work_coupling)
                .map(voc::Column::header_unit)
                .unwrap_or_default();
            header.extend(classes.iter().map(|c| format!("{} {unit}", dissipation(c))));
        }
        let n = batch.num_rows();
        let shown = n.min(MAX_TABLE_ROWS);
        let mut rows = Vec::with_capacity(shown);
        for r in 0..shown {
            let mut row = Vec::with_capacity(header.len());
            for name in std::iter::once(COL_COMBO)
                .chain(axes.iter().map(String::as_str))
                .chain(std::iter::once(voc::N_RUNS))
            {
                row.push(col(name).map(|a| cell(a.as_ref(), r)).unwrap_or_default());
            }
            for c in classes {
                let part = |name: String| {
                    col(&name).and_then(|a| {
                        a.as_any()
                            .downcast_ref::<Float64Array>()
                            .map(|x| x.value(r))
                    })
                };
                row.push(
                    match (
                        part(voc::fraction(c)),
                        part(voc::fraction_bound(c, "lo")),
                        part(voc::fraction_bound(c, "hi")),
                    ) {
                        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
                        _ => String::new(),
                    },
                );
            }
            if damped {
                row.extend(classes.iter().map(|c| match float(&dissipation(c), r) {
                    Some(x) if x.is_finite() => format!("{x:.3}"),
                    _ => String::new(),
                }));
            }
            rows.push(row);
        }
        Table {
            header,
            rows,
            omitted: n - shown,
        }
    }
}

impl Table {
    /// The table as aligned text for a terminal: its first `limit` rows, each column as
    /// wide as its widest cell, and a last line saying how many rows were left out.
    pub fn text(&self, limit: usize) -> String {
        let shown = &self.rows[..self.rows.len().min(limit)];
        let width = |k: usize| {
            shown
                .iter()
                .map(|r| r.get(k).map_or(0, |c| c.chars().count()))
                .chain(std::iter::once(self.header[k].chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.header.len()).map(width).collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, &w)| format!("{c:<w$}"))
                .collect();
            padded.join("  ").trim_end().to_string() + "\n"
        };
        let mut out = line(&self.header);
        for row in shown {
            out += &line(row);
        }
        let left = self.rows.len() - shown.len() + self.omitted;
        if left > 0 {
            out += &format!("… {left} more rows (--limit, or the --out Parquet file)\n");
        }
        out
    }
}

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #1a1a1a; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
.scroll { max-height: 30em; overflow: auto; }
.ok { color: #176b1e; font-weight: bold; } .bad { color: #a11; font-weight: bold; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; max-width: 100%; }
figure img { max-width: 100%; border: 1px solid #eee; cursor: zoom-in; }
figure img.zoomed { position: fixed; inset: 2%; width: 96%; height: 96%; object-fit: contain; background: white; z-index: 10; cursor: zoom-out; }
figcaption { font-size: 0.85em; color: #444; max-width: 40em; }
.maps figure { width: 46%; }
.snaps figure { width: 23%; }
pre { background: #f7f7f7; padding: 0.8em; overflow: auto; }
#broken { display: none; background: #fdd; padding: 0.5em; }
";

/// On load: every picture must have decoded (the page says so where one has not, and
/// records the count in `data-images` on the body); a click enlarges a picture.
const SCRIPT: &str = "
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  document.body.setAttribute('data-images', broken.length === 0 ? 'ok ' + imgs.length : 'broken ' + broken.length);
  if (broken.length > 0) {
    var note = document.getElementById('broken');
    note.textContent = broken.length + ' of ' + imgs.length + ' pictures could not be shown.';
    note.style.display = 'block';
  }
  imgs.forEach(function (i) {
    i.addEventListener('click', function () { i.classList.toggle('zoomed'); });
  });
});
";

fn figure(html: &mut String, f: &Figure) -> Result<(), OutputError> {
    let _ = writeln!(
        html,
        "<figure><img src=\"{}\" alt=\"{}\"><figcaption><b>{}</b> {}</figcaption></figure>",
        data_uri(&f.path)?,
        escape(&f.title),
        escape(&f.title),
        escape(&f.caption)
    );
    Ok(())
}

/// One section: its heading (a facet value), its maps and its table; headings one
/// level lower under a facet value's.
fn render_section(html: &mut String, s: &Section) -> Result<(), OutputError> {
    let e = escape;
    let sub = match &s.heading {
        Some(name) => {
            let _ = writeln!(
                html,
                "<section class=\"facet\" data-facet=\"{}\" data-rows=\"{}\">\n<h2>{}</h2>",
                e(name),
                s.rows,
                e(name)
            );
            "h3"
        }
        None => "h2",
    };
    let _ = writeln!(html, "<{sub}>Maps</{sub}>");
    if let Some(note) = &s.maps_note {
        let _ = writeln!(html, "<p>{}</p>", e(note));
    }
    html.push_str("<div class=\"maps\">\n");
    for f in &s.maps {
        figure(html, f)?;
    }
    html.push_str("</div>\n");

    let t = &s.summary;
    let _ = writeln!(
        html,
        "<{sub}>Class fractions per combination</{sub}>\n<p>Fraction of the runs of each combination \
         in each class, with its Wilson score 95 % interval (<code>metachron summarize</code> \
         writes the full table, per-class metric means included).{}</p>\n<div class=\"scroll\"><table>",
        if t.omitted > 0 {
            format!(" The first {} combinations; {} more in the Parquet summary.", t.rows.len(), t.omitted)
        } else {
            String::new()
        }
    );
    html.push_str("<tr>");
    for c in &t.header {
        let _ = write!(html, "<th>{}</th>", e(c));
    }
    html.push_str("</tr>\n");
    for row in &t.rows {
        html.push_str("<tr>");
        for c in row {
            let _ = write!(html, "<td>{}</td>", e(c));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table></div>\n");

    if s.heading.is_some() {
        html.push_str("</section>\n");
    }
    Ok(())
}

/// The page's HTML.
pub fn render(r: &Report) -> Result<String, OutputError> {
    let mut h = String::new();
    let e = escape;
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head><body>\n\
         <div id=\"broken\"></div>\n<h1>{}</h1>\n<p>{}</p>\n",
        e(&r.title),
        e(&r.title),
        e(&r.description)
    );
    h.push_str("<table>\n");
    for (k, v) in &r.facts {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", e(k), e(v));
    }
    let _ = writeln!(
        h,
        "<tr><th>check</th><td><span class=\"{}\">{}</span> {}</td></tr>\n</table>",
        if r.check_ok { "ok" } else { "bad" },
        if r.check_ok {
            "complete and clean"
        } else {
            "NOT complete and clean"
        },
        e(&r.check_lines.join("; "))
    );

    h.push_str(
        "<h2>The sweep</h2>\n<table><tr><th>parameter</th><th>swept as</th><th>values</th></tr>\n",
    );
    for (p, kind, values) in &r.axes {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            e(p),
            e(kind),
            e(values)
        );
    }
    let _ = writeln!(
        h,
        "</table>\n<details><summary>the sweep file, as recorded in the dataset</summary><pre>{}</pre></details>",
        e(&r.sweep_text)
    );

    for section in &r.sections {
        render_section(&mut h, section)?;
    }

    h.push_str("<h2>What each class looks like</h2>\n");
    if r.exemplars.is_empty() {
        h.push_str("<p>No exemplars (no rows).</p>\n");
    }
    for x in &r.exemplars {
        let _ = writeln!(h, "<h3 id=\"class-{}\">{}</h3>", e(&x.class), e(&x.heading));
        for n in &x.notes {
            let _ = writeln!(h, "<p>{}</p>", e(n));
        }
        if let Some(a) = &x.animation {
            figure(
                &mut h,
                &Figure {
                    path: a.clone(),
                    title: format!("{}: the run", x.class),
                    caption: "animation (loops); the last frame holds the run's class and metrics"
                        .into(),
                },
            )?;
        }
        if !x.metrics.is_empty() {
            h.push_str("<figure><table>");
            for (k, v) in &x.metrics {
                let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", e(k), e(v));
            }
            h.push_str("</table></figure>\n");
        }
        h.push_str("<div class=\"snaps\">\n");
        for s in &x.snapshots {
            let name = s
                .file_stem()
                .map(|n| n.to_string_lossy().replace("snapshot_t", "t = ") + " s")
                .unwrap_or_default();
            figure(
                &mut h,
                &Figure {
                    path: s.clone(),
                    title: name,
                    caption: String::new(),
                },
            )?;
        }
        h.push_str("</div>\n");
    }
    let _ = writeln!(
        h,
        "<p><small>Written by metachron {} (<code>metachron report</code>).</small></p>\n</body></html>",
        crate::VERSION
    );
    Ok(h)
}

/// Write the page to `out` (under a temporary name, renamed when complete); returns
/// its size in bytes.
pub fn write_page(r: &Report, out: &Path) -> Result<u64, OutputError> {
    let html = render(r)?;
    let mut pending = PendingFile::create(out)?;
    let mut file = pending.take_file()?;
    std::io::Write::write_all(&mut file, html.as_bytes()).map_err(|source| OutputError::Io {
        path: out.display().to_string(),
        source,
    })?;
    drop(file);
    pending.commit()?;
    Ok(html.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_test_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
    }

    #[test]
    fn html_special_characters_are_escaped() {
        assert_eq!(
            escape(r#"a < b & "c" > 'd'"#),
            "a &lt; b &amp; &quot;c&quot; &gt; &#39;d&#39;"
        );
    }
}
