//! Small multiples: one panel per value (or combination of values) of the facet
//! parameters, every panel on the same axes, tiles and colour scale, in one picture.

use super::*;
use crate::sweep::facet::groups;

/// The most panels one picture holds (a facet with more values is refused: draw a
/// subset with `--where`, or put the parameter on an axis).
pub const MAX_PANELS: usize = crate::sweep::facet::MAX_FACET_VALUES;

/// One panel's size in pixels, the colour bar's column beside them, the title's band.
const PANEL: (u32, u32) = (460, 400);
const SIDE: u32 = 190;
const TITLE_BAND: u32 = 80;

/// Everything a picture of panels draws: each panel's tiles (its `Picture`) under
/// its name, one title, one colour bar or class legend.
struct Panels<'a> {
    panels: Vec<(String, Picture<'a>)>,
    cols: u32,
    title: Vec<String>,
    bar: Option<((f64, f64), String)>,
    legend: Vec<Class>,
    strike: Option<f64>,
}

impl Drawing for Panels<'_> {
    fn size(&self) -> (u32, u32) {
        let rows = (self.panels.len() as u32).div_ceil(self.cols);
        (self.cols * PANEL.0 + SIDE, TITLE_BAND + rows * PANEL.1)
    }

    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let (main, side) = root.split_horizontally(self.cols * PANEL.0);
        let main = draw_title(&main, &self.title)?;
        let rows = (self.panels.len() as u32).div_ceil(self.cols);
        let areas = main.split_evenly((rows as usize, self.cols as usize));
        for (area, (name, picture)) in areas.iter().zip(&self.panels) {
            let style = ("sans-serif", 17)
                .into_font()
                .into_text_style(area)
                .pos(Pos::new(HPos::Center, VPos::Top));
            let x = area.dim_in_pixel().0 as i32 / 2;
            area.draw(&Text::new(name.clone(), (x, 4), style))
                .map_err(|x| x.to_string())?;
            draw_tiles(&area.split_vertically(24).1, picture)?;
        }
        draw_key(&side, &self.bar, &self.legend, self.strike)?;
        root.present().map_err(e)
    }
}

/// Draw `req` from `ds` into `out` as one panel per combination of the `facets`'
/// values among the rows (in the order of their values), on shared axes and one
/// colour scale. Returns the summary over every panel and the panels' names.
pub fn draw_panels(
    ds: &Rows,
    req: &MapRequest,
    opts: &MapOptions,
    facets: &[String],
    out: &Path,
) -> Result<(MapSummary, Vec<String>), OutputError> {
    check_out(out)?;
    let groups = groups(ds, facets).map_err(|e| err(out, e.to_string()))?;
    let base = compute(ds, req, opts, out)?;
    let cells = (0..groups.names.len())
        .map(|k| {
            let tiles = Tiles {
                rects: base.tiles.rects.clone(),
                members: base
                    .tiles
                    .members
                    .iter()
                    .map(|m| {
                        m.iter()
                            .copied()
                            .filter(|&r| groups.of_row[r] == k)
                            .collect()
                    })
                    .collect(),
            };
            aggregate(ds, req, base.q, &tiles, base.ci_width, out)
        })
        .collect::<Result<Vec<Cells>, _>>()?;
    let all: Vec<f64> = cells.iter().flat_map(|c| c.num.iter().copied()).collect();
    let range = colour_range(base.q, &req.metric, &all, opts.range);
    let runs: Vec<usize> = cells.iter().flat_map(|c| c.runs.iter().copied()).collect();
    let runs = runs_per_filled_cell(&runs);
    let names = groups.names;
    let panels: Vec<(String, Picture)> = names
        .iter()
        .zip(&cells)
        .map(|(name, c)| {
            let picture = Picture {
                xa: &base.xa,
                ya: &base.ya,
                title: Vec::new(),
                rects: &base.tiles.rects,
                colours: tile_colours(base.q, c, range),
                wide: &c.wide,
                bar: None,
                legend: Vec::new(),
                strike: None,
            };
            (name.clone(), picture)
        })
        .collect();
    let wide_cells = cells
        .iter()
        .map(|c| c.wide.iter().filter(|&&w| w).count())
        .sum();
    let mut title = title_lines(ds, &base.what, runs);
    title.push(format!("one panel per {}", facets.join(" and ")));
    let drawing = Panels {
        cols: (panels.len() as u32).clamp(1, 3),
        panels,
        title,
        bar: (base.q != Quantity::Class)
            .then(|| (bar_range(req, base.q, range), base.what.clone())),
        legend: Class::ALL
            .iter()
            .copied()
            .filter(|k| cells.iter().any(|c| c.class.contains(&Some(*k))))
            .collect(),
        strike: (wide_cells > 0).then_some(base.ci_width),
    };
    write_image(out, &drawing)?;
    let summary = MapSummary {
        rows: ds.len(),
        cells: base.tiles.rects.len() * cells.len(),
        filled_cells: cells.iter().map(|c| filled_cells(base.q, c)).sum(),
        x_log: base.xa.log,
        y_log: base.ya.log,
        range,
        wide_cells,
        runs_per_cell: runs,
    };
    Ok((summary, names))
}
