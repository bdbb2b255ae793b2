//! The runs page in a real browser.
//!
//! [`look`] opens `index.html` from disk in headless Chromium, inside a frame
//! of one of the [`SCREENS`] (a phone's, 390 px wide, and a laptop's, 1,280),
//! and reads back what the page shows: its sections, every run's headline and
//! where it ends, every targets table, whether each image decoded, the page's
//! width, and the token view. [`check`] compares that with the `report.json`
//! files and, for GPT-2 and GPT-4, with tiktoken's ids. [`screenshots`] saves a picture
//! of each lecture's section.
//!
//! Chromium runs as Debian's `chromium` package does as root in CI:
//! `--headless --no-sandbox --disable-gpu --disable-background-networking
//! --no-first-run` and a fresh `--user-data-dir`, plus
//! `--allow-file-access-from-files` so that the harness page may read the
//! framed page's DOM.

use super::{
    headline_rows, picture_files, shows_pictures, stage_heading, target_cells, visible, RunFolder,
    TOKEN_COLOURS,
};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The width of a phone's screen, in CSS pixels.
pub const NARROW_WIDTH: u32 = 390;

/// The screens the page is checked on, width × height in CSS pixels: a
/// phone's (an iPhone 12 to 15) and a laptop's. On each, nothing may scroll
/// sideways, and each run's headline must end within the first screen of it.
pub const SCREENS: [(u32, u32); 2] = [(NARROW_WIDTH, 844), (1280, 800)];

/// The browser: `$CHROMIUM`, or the first of `chromium`, `chromium-browser`,
/// `google-chrome` on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(course::find_on_path)
}

/// What the browser saw.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// The ids of the lecture sections, in order.
    pub sections: Vec<String>,
    /// Each run's id and the cells of its targets table, row by row.
    pub runs: Vec<SeenRun>,
    /// Every image: its alt text and whether it decoded.
    pub images: Vec<SeenImage>,
    /// Inline SVG drawings.
    pub svgs: usize,
    /// The page's scrollable width and the frame's width, in CSS pixels.
    pub scroll_width: u32,
    /// See `scroll_width`.
    pub client_width: u32,
    /// The frame's height, in CSS pixels: one screen.
    pub client_height: u32,
    /// `src` and `href` values that point off the machine.
    pub external: Vec<String>,
    /// Whether the failed-targets banner is shown.
    pub failures_banner: bool,
    /// The text of every error note on the page (a file it could not show).
    pub errors: Vec<String>,
    /// The token view.
    pub tokens: Vec<SeenText>,
}

/// One run as shown.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeenRun {
    /// `lecture-07-full`.
    pub id: String,
    /// The targets table's rows, each its cells' text.
    pub rows: Vec<Vec<String>>,
    /// The targets table's stage headings.
    pub stages: Vec<String>,
    /// The headline table's rows, each its cells' text; `None` without a headline.
    pub headline: Option<Vec<Vec<String>>>,
    /// How far below the run's top the headline ends, in CSS pixels.
    pub headline_bottom: Option<f64>,
}

/// One image as shown.
#[derive(Debug, Deserialize)]
pub struct SeenImage {
    /// Its alt text.
    pub alt: String,
    /// Loaded and decoded, with a width.
    pub ok: bool,
}

/// One text of the token view.
#[derive(Debug, Deserialize)]
pub struct SeenText {
    /// The text.
    pub text: String,
    /// Each tokenizer's split.
    pub tokenizers: Vec<SeenTokens>,
}

/// One tokenizer's split as shown.
#[derive(Debug, Deserialize)]
pub struct SeenTokens {
    /// "GPT-4".
    pub name: String,
    /// The ids of the coloured spans.
    pub ids: Vec<u64>,
    /// The spans' bytes, in hex, joined.
    pub bytes: String,
    /// The spans' computed background colours.
    pub colours: Vec<String>,
    /// The spans' text as rendered.
    pub texts: Vec<String>,
}

const HARNESS: &str = r#"<!doctype html>
<html><body>
<iframe id="page" src="{{PAGE_URL}}" style="width:{{WIDTH}}px;height:{{HEIGHT}}px;border:0" onload="look()"></iframe>
<script>
function look() {
  const d = document.getElementById('page').contentDocument;
  const all = (root, sel) => Array.from(root.querySelectorAll(sel));
  const cells = tr => Array.from(tr.cells).map(c => c.textContent);
  // Folded parts count too: open them before measuring the width. What is
  // folded comes after a run's headline, so its place does not move.
  all(d, 'details').forEach(x => { x.open = true; });
  const seen = {
    sections: all(d, 'section.lecture').map(s => s.id),
    runs: all(d, '.run').map(r => {
      const h = r.querySelector('.headline');
      return {
        id: r.id,
        rows: all(r, 'table.targets tr.target').map(cells),
        stages: all(r, 'table.targets tr.stage').map(tr => tr.textContent),
        headline: h ? all(h, 'tbody tr').map(cells) : null,
        headlineBottom: h ? h.getBoundingClientRect().bottom - r.getBoundingClientRect().top : null,
      };
    }),
    images: Array.from(d.images).map(i => ({ alt: i.alt, ok: i.complete && i.naturalWidth > 0 })),
    svgs: all(d, 'svg').length,
    scrollWidth: d.documentElement.scrollWidth,
    clientWidth: d.documentElement.clientWidth,
    clientHeight: d.documentElement.clientHeight,
    external: all(d, '[src],[href]').map(e => e.getAttribute('src') || e.getAttribute('href'))
      .filter(u => /^([a-z]+:)?\/\//i.test(u)),
    failuresBanner: d.getElementById('failures') !== null,
    errors: all(d, '.error').map(e => e.textContent),
    tokens: all(d, '.token-text').map(t => ({
      text: t.dataset.text,
      tokenizers: all(t, '.tokenizer').map(k => ({
        name: k.dataset.name,
        ids: all(k, '.tok').map(s => Number(s.dataset.id)),
        bytes: all(k, '.tok').map(s => s.dataset.bytes).join(''),
        colours: all(k, '.tok').map(s => getComputedStyle(s).backgroundColor),
        texts: all(k, '.tok').map(s => s.textContent),
      })),
    })),
  };
  const out = document.createElement('script');
  out.type = 'application/json';
  out.id = 'seen';
  out.textContent = JSON.stringify(seen).replace(/</g, '\\u003c');
  document.body.appendChild(out);
}
</script>
</body></html>
"#;

/// A scratch folder for one browser run, removed when dropped.
struct Scratch(PathBuf);

/// Tells apart the scratch folders of one process (tests run in threads).
static SCRATCH_COUNT: AtomicUsize = AtomicUsize::new(0);

impl Scratch {
    fn new(what: &str) -> Result<Scratch, String> {
        let n = SCRATCH_COUNT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zth-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir); // left by an earlier process with our pid
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `file:///abs/path`, with the characters a URL can't hold percent-encoded.
fn file_url(path: &Path) -> Result<String, String> {
    let abs = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut url = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(url)
}

/// Runs Chromium headless with `args` and a fresh profile in `scratch`;
/// returns its stdout. Gives up after `timeout`.
fn chromium(
    browser: &Path,
    scratch: &Path,
    args: &[String],
    timeout: Duration,
) -> Result<String, String> {
    let mut command = Command::new(browser);
    // Its own process group, so that a timeout ends Chromium's helpers too.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--hide-scrollbars",
            // Containers give /dev/shm 64 MB, too little for a page of plots.
            "--disable-dev-shm-usage",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.join("profile").display()
        ))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", browser.display()))?;
    // Read stdout on a thread, so a large DOM can't fill the pipe while we wait.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let mut stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > timeout {
            // SAFETY: signals the process group made above.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.wait();
            return Err(format!(
                "{} did not finish within {} s",
                browser.display(),
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader
        .join()
        .map_err(|_| "the reader thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    let err = errors.join().unwrap_or_default();
    if !status.success() {
        let lines: Vec<&str> = err.lines().collect();
        let tail = lines[lines.len().saturating_sub(5)..].join("\n");
        return Err(format!("{} failed ({status}):\n{tail}", browser.display()));
    }
    Ok(out)
}

/// Loads `index` in a frame of `screen` (width, height) and reads back what it shows.
pub fn look(browser: &Path, index: &Path, screen: (u32, u32)) -> Result<Seen, String> {
    let scratch = Scratch::new("page-check")?;
    let harness = scratch.0.join("harness.html");
    // The URL goes in last: a path may hold any of the other placeholders' text.
    let html = HARNESS
        .replace("{{WIDTH}}", &screen.0.to_string())
        .replace("{{HEIGHT}}", &screen.1.to_string())
        .replace("{{PAGE_URL}}", &file_url(index)?);
    std::fs::write(&harness, html).map_err(|e| format!("{}: {e}", harness.display()))?;
    let dom = chromium(
        browser,
        &scratch.0,
        &[
            "--allow-file-access-from-files".to_string(),
            "--dump-dom".to_string(),
            file_url(&harness)?,
        ],
        Duration::from_secs(120),
    )?;
    let start = "<script type=\"application/json\" id=\"seen\">";
    let json = dom
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map(|(json, _)| json)
        .ok_or_else(|| {
            format!(
                "{}: the browser never finished loading the page (no report from the harness)",
                index.display()
            )
        })?;
    serde_json::from_str(json).map_err(|e| format!("the harness's report: {e}"))
}

/// What [`check`] counted, for the summary line.
#[derive(Debug, Default)]
pub struct Checked {
    /// Lecture sections present.
    pub sections: usize,
    /// Runs whose table matched their report.
    pub runs: usize,
    /// Target rows compared.
    pub rows: usize,
    /// Headlines that matched their report and ended within the first screen.
    pub headlines: usize,
    /// Images that decoded.
    pub images: usize,
    /// Inline drawings.
    pub svgs: usize,
    /// Token splits compared with tiktoken's ids.
    pub tiktoken_splits: usize,
    /// Token splits compared with tokens.json.
    pub token_splits: usize,
}

/// Compares what the browser showed with the runs' files. Returns the counts,
/// or every problem found.
pub fn check(
    seen: &Seen,
    folders: &[RunFolder],
    tiktoken: Option<&Value>,
) -> Result<Checked, Vec<String>> {
    let mut problems = Vec::new();
    let mut checked = Checked::default();
    let mut any_failed = false;
    for folder in folders {
        let section = folder.section();
        if !seen.sections.contains(&section) {
            problems.push(format!("no section {section} for {}", folder.dir.display()));
        }
        let id = folder.id();
        let Some(run) = seen.runs.iter().find(|r| r.id == id) else {
            problems.push(format!("no run {id} for {}", folder.dir.display()));
            continue;
        };
        let report = match &folder.report {
            Ok(report) => report,
            Err(e) => {
                any_failed = true;
                problems.push(e.clone());
                continue;
            }
        };
        let at = format!("{id} at {} px", seen.client_width);
        match (&run.headline, run.headline_bottom) {
            (Some(rows), Some(bottom)) => {
                let want = headline_rows(report);
                if rows.len() != want.len() || rows.iter().zip(&want).any(|(r, w)| r[..] != w[..]) {
                    problems.push(format!("{at}: headline {rows:?} shown for {want:?}"));
                } else if bottom > f64::from(seen.client_height) {
                    problems.push(format!(
                        "{at}: the headline ends {bottom:.0} px below the run's top, past the first screen ({} px)",
                        seen.client_height
                    ));
                } else {
                    checked.headlines += 1;
                }
            }
            _ => problems.push(format!("{at}: no headline")),
        }
        let headings: Vec<String> = report
            .stages
            .iter()
            .filter(|s| !s.targets.is_empty())
            .map(stage_heading)
            .collect();
        if run.stages != headings {
            problems.push(format!(
                "{id}: stage headings {:?} shown for {headings:?}",
                run.stages
            ));
        }
        let targets: Vec<&crate::Target> = report.stages.iter().flat_map(|s| &s.targets).collect();
        if run.rows.len() != targets.len() {
            problems.push(format!(
                "{id}: {} target rows shown, report.json has {}",
                run.rows.len(),
                targets.len()
            ));
            continue;
        }
        for (row, t) in run.rows.iter().zip(&targets) {
            any_failed |= t.gates() && !t.pass;
            let want = target_cells(t);
            if row[..] != want[..] {
                problems.push(format!("{id}: row {row:?} shown for {want:?}"));
            }
        }
        checked.rows += targets.len();
        checked.runs += 1;
    }
    checked.sections = seen.sections.len();
    if seen.failures_banner != any_failed {
        problems.push(format!(
            "the failed-targets banner is {} but {} target failed",
            if seen.failures_banner {
                "shown"
            } else {
                "missing"
            },
            if any_failed { "a" } else { "no" }
        ));
    }
    for image in &seen.images {
        if image.ok {
            checked.images += 1;
        } else {
            problems.push(format!("image {:?} is broken", image.alt));
        }
    }
    let pictures: usize = folders
        .iter()
        .filter(|f| shows_pictures(f, folders))
        .map(|f| picture_files(&f.dir).len())
        .sum();
    if seen.images.len() != pictures {
        problems.push(format!(
            "{} images shown, the run folders hold {pictures}",
            seen.images.len()
        ));
    }
    for error in &seen.errors {
        // An unreadable report is already listed, in the page's own words.
        if !problems.contains(error) {
            problems.push(format!("the page shows an error: {error}"));
        }
    }
    checked.svgs = seen.svgs;
    if seen.scroll_width > seen.client_width {
        problems.push(format!(
            "at {} px wide the page scrolls sideways: it is {} px wide",
            seen.client_width, seen.scroll_width
        ));
    }
    for url in &seen.external {
        problems.push(format!("the page loads {url} from the network"));
    }
    check_tokens(seen, folders, tiktoken, &mut checked, &mut problems);
    if problems.is_empty() {
        Ok(checked)
    } else {
        Err(problems)
    }
}

/// The token view: spans coloured in turn, their bytes the text, their ids
/// those of tokens.json and, for GPT-2 and GPT-4, tiktoken's.
fn check_tokens(
    seen: &Seen,
    folders: &[RunFolder],
    tiktoken: Option<&Value>,
    checked: &mut Checked,
    problems: &mut Vec<String>,
) {
    let shown_by = folders
        .iter()
        .find(|f| f.lecture == 8 && super::shows_pictures(f, folders))
        .filter(|f| f.dir.join("tokens.json").exists())
        .map(|f| f.dir.join("tokens.json"));
    let Some(file) = shown_by else {
        if !seen.tokens.is_empty() {
            problems.push("a token view is shown without a tokens.json".into());
        }
        return;
    };
    let written: Value = match std::fs::read_to_string(&file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return problems.push(format!("{}: {e}", file.display())),
    };
    let texts = written["texts"].as_array().cloned().unwrap_or_default();
    if seen.tokens.len() != texts.len() {
        problems.push(format!(
            "token view: {} texts shown, {} in {}",
            seen.tokens.len(),
            texts.len(),
            file.display()
        ));
    }
    for (shown, entry) in seen.tokens.iter().zip(&texts) {
        let text_hex: String = shown.text.bytes().map(|b| format!("{b:02x}")).collect();
        if entry["text"] != shown.text.as_str() {
            problems.push(format!(
                "token view: {:?} shown for {}",
                shown.text, entry["text"]
            ));
        }
        let splits = entry["tokenizers"].as_array().map_or(0, Vec::len);
        if shown.tokenizers.len() != splits {
            problems.push(format!(
                "token view of {:?}: {} tokenizers shown, {splits} in {}",
                shown.text,
                shown.tokenizers.len(),
                file.display()
            ));
        }
        for (k, split) in shown.tokenizers.iter().enumerate() {
            let label = format!("token view of {:?}, {}", shown.text, split.name);
            if split.bytes != text_hex {
                problems.push(format!("{label}: the pieces do not spell the text"));
            }
            for (j, colour) in split.colours.iter().enumerate() {
                let want = TOKEN_COLOURS[j % TOKEN_COLOURS.len()];
                if colour != want {
                    problems.push(format!("{label}: token {j} is {colour}, not {want}"));
                }
            }
            let file_ids: Vec<u64> = entry["tokenizers"][k]["ids"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            if split.ids != file_ids {
                problems.push(format!(
                    "{label}: ids {:?}, tokens.json has {file_ids:?}",
                    split.ids
                ));
            }
            // What each span shows: its piece, whitespace made visible.
            let pieces = entry["tokenizers"][k]["pieces"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for (j, (text, piece)) in split.texts.iter().zip(&pieces).enumerate() {
                let bytes: Vec<u8> = piece
                    .as_array()
                    .map(|b| {
                        b.iter()
                            .filter_map(Value::as_u64)
                            .map(|b| b as u8)
                            .collect()
                    })
                    .unwrap_or_default();
                let want = visible(&String::from_utf8_lossy(&bytes));
                if *text != want {
                    problems.push(format!("{label}: token {j} shows {text:?}, not {want:?}"));
                }
            }
            checked.token_splits += 1;
            let encoding = match split.name.as_str() {
                "GPT-4" => "cl100k_base",
                "GPT-2" => "r50k_base",
                _ => continue,
            };
            let Some(cases) = tiktoken else { continue };
            let reference = cases[encoding]["strings"]
                .as_array()
                .and_then(|strings| strings.iter().find(|c| c["text"] == shown.text.as_str()))
                .and_then(|c| c["ids"].as_array())
                .map(|ids| ids.iter().filter_map(Value::as_u64).collect::<Vec<u64>>());
            match reference {
                Some(ids) if ids == split.ids => checked.tiktoken_splits += 1,
                Some(ids) => problems.push(format!(
                    "{label}: ids {:?}, tiktoken's {encoding} gives {ids:?}",
                    split.ids
                )),
                None => problems.push(format!("{label}: the tiktoken reference lacks this text")),
            }
        }
    }
}

/// A page that frames the runs page at `width`×`height` and scrolls the frame
/// to the element `id` once it has loaded: a screenshot then shows that
/// section, which `index.html#id` alone does not reliably do in headless mode.
const SHOT: &str = r#"<!doctype html>
<html><body style="margin:0">
<iframe src="{{PAGE_URL}}" style="width:{{WIDTH}}px;height:{{HEIGHT}}px;border:0;display:block"
 onload="const w = this.contentWindow, el = this.contentDocument.getElementById('{{ID}}');
         if (el) w.scrollTo(0, el.getBoundingClientRect().top + w.scrollY);"></iframe>
</body></html>
"#;

/// Saves a screenshot of each section (`lecture-NN.png`, `tools.png`, 1100 px wide) and of
/// the page's top at [`NARROW_WIDTH`] (`narrow.png`) into `out`.
pub fn screenshots(
    browser: &Path,
    index: &Path,
    sections: &[String],
    out: &Path,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let url = file_url(index)?;
    let mut shots: Vec<(String, String, (u32, u32))> = sections
        .iter()
        .map(|id| (format!("{id}.png"), id.clone(), (1100, 1400)))
        .collect();
    shots.push(("narrow.png".into(), String::new(), (NARROW_WIDTH, 844)));
    let mut written = Vec::new();
    for (name, id, (width, height)) in shots {
        let scratch = Scratch::new("page-shot")?;
        let frame = scratch.0.join("shot.html");
        let html = SHOT
            .replace("{{WIDTH}}", &width.to_string())
            .replace("{{HEIGHT}}", &height.to_string())
            .replace("{{ID}}", &id)
            .replace("{{PAGE_URL}}", &url);
        std::fs::write(&frame, html).map_err(|e| format!("{}: {e}", frame.display()))?;
        let path = out.join(&name);
        let tmp = scratch.0.join(&name);
        chromium(
            browser,
            &scratch.0,
            &[
                "--allow-file-access-from-files".to_string(),
                format!("--screenshot={}", tmp.display()),
                format!("--window-size={width},{height}"),
                file_url(&frame)?,
            ],
            Duration::from_secs(120),
        )?;
        let png = std::fs::read(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        crate::write_atomic(&path, &png).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
