//! `metachron report` in a real browser: Debian's chromium, headless, loads the page
//! with no console message (no script error), decodes every picture (the page's own
//! check records it on the body), and its screenshot is not blank.
//!
//! Where METACHRON_REQUIRE_BROWSER=1 (as in .ci/run) a missing chromium fails the
//! test; elsewhere it is skipped with the reason printed.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::scratch;

fn metachron(args: &[&str], dir: &Path) -> String {
    let out = common::bin::command()
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "metachron {}: {text}", args.join(" "));
    text
}

/// A 3 x 2 sweep of 1 s runs with only leg 1 driven: several classes (unlocked,
/// locked, synchronous), so the page has fraction maps and exemplars of each.
fn report_of_small_sweep(dir: &Path) -> (PathBuf, String) {
    std::fs::write(
        dir.join("small.toml"),
        "name = \"small\"\ndescription = \"alpha x beta, leg 1 driven, 1 s\"\n\
         [base]\nt_final = 1.0\nactuated = \"first\"\n\
         [[axes]]\nparam = \"alpha\"\nlogspace = { start = 10.0, stop = 10000.0, num = 3 }\n\
         [[axes]]\nparam = \"beta\"\nvalues = [10.0, 10000.0]\n",
    )
    .unwrap();
    metachron(&["sweep", "small.toml", "--out", "ds", "--quiet"], dir);
    let said = metachron(&["report", "ds", "--out", "page/report.html"], dir);
    (dir.join("page").join("report.html"), said)
}

/// The browser: `chromium` (Debian), else the other names it goes by.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for d in std::env::split_paths(&path) {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Run chromium headless on `page` with `extra` flags; (stdout, stderr). A browser that
/// does not finish within two minutes is killed (a hung browser must not hang CI).
fn run_chromium(browser: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let profile = scratch("profile");
    // Output to files: the dumped DOM (megabytes of embedded pictures) would fill a pipe
    // that nobody reads while the browser runs.
    let (out_path, err_path) = (profile.with_extension("out"), profile.with_extension("err"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            // Lets the load event and the page's check run before the DOM is dumped.
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .expect("chromium starts");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let said = (read(&out_path), read(&err_path));
    std::fs::remove_dir_all(&profile).ok();
    std::fs::remove_file(&out_path).ok();
    std::fs::remove_file(&err_path).ok();
    said
}

/// Mean and standard deviation of the luminance of an RGB(A) PNG, and its size.
fn luminance_stats(png_path: &Path) -> (f64, f64, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    let lum: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    (mean, var.sqrt(), info.width, info.height)
}

#[test]
fn the_report_loads_in_chromium_without_errors_and_every_picture_decodes() {
    let dir = scratch("page");
    let (page, said) = report_of_small_sweep(&dir);
    let html = std::fs::read_to_string(&page).unwrap();
    // What the page must say, whatever the browser: the sweep, its check, the maps
    // and an exemplar of every class the dataset holds.
    assert!(html.contains("metachron atlas: small"), "{said}");
    assert!(html.contains("complete and clean"));
    assert!(html.contains("the sweep file, as recorded in the dataset"));
    let classes: Vec<&str> = ["metachronal", "synchronous", "locked", "unlocked", "still"]
        .into_iter()
        .filter(|c| html.contains(&format!("id=\"class-{c}\"")))
        .collect();
    assert!(classes.len() >= 2, "exemplars of {classes:?} only:\n{said}");
    for c in &classes {
        assert!(
            html.contains(&format!("<b>fraction {c}</b>")),
            "no fraction map of {c}"
        );
        assert!(said.contains(&format!("exemplar of {c}: point")), "{said}");
    }
    assert!(said.contains("equal to its row bit for bit"), "{said}");
    let images = html.matches("<img ").count();
    assert!(html.matches("src=\"data:image/gif;base64,").count() == classes.len());
    assert!(images > 2 * classes.len(), "{images} pictures");
    // No file beside the page: everything is embedded.
    let beside: Vec<_> = std::fs::read_dir(page.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["report.html"]);

    let Some(browser) = chromium() else {
        if std::env::var("METACHRON_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!(
                "chromium is required (METACHRON_REQUIRE_BROWSER=1): apt-get install -y chromium"
            );
        }
        println!("skip the browser half: no chromium on PATH (apt-get install -y chromium)");
        return;
    };
    // The DOM after load: the page's script has checked every picture.
    let (dom, log) = run_chromium(&browser, &page, &["--dump-dom".to_string()]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    assert!(
        dom.contains(&format!("data-images=\"ok {images}\"")),
        "not every picture decoded: {}",
        dom.lines()
            .find(|l| l.contains("<body"))
            .unwrap_or("(no body)")
    );
    // A screenshot of the top of the page: the title, the facts and the first maps.
    let shot = dir.join("shot.png");
    let (_, log) = run_chromium(
        &browser,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1600".to_string(),
        ],
    );
    assert!(shot.exists(), "no screenshot: {log}");
    let (mean, std, w, h) = luminance_stats(&shot);
    println!("screenshot {w} x {h}: luminance mean {mean:.1}, standard deviation {std:.1}");
    assert_eq!((w, h), (1280, 1600));
    // A blank (all white or all black) page has no variance; text and maps give plenty.
    assert!(
        std > 20.0 && mean > 20.0 && mean < 250.0,
        "mean {mean}, std {std}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
