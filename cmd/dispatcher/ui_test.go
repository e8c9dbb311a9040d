package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// Tokens of the dashboard tests' services.
const (
	uiAdmin  = "ui-admin-token-0123456789"
	uiClient = "ui-client-token-0123456789"
)

// startBrowser starts one headless Chromium (Debian's chromium) for the
// dashboard tests, quiet (no background network, no component updates, no
// sync) with a fresh profile, and stops it when t ends. It fails t without
// chromium: CI must not pass by testing nothing.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: install it (Debian: apt-get install chromium; .ci/run does)")
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	t.Cleanup(cancel)
	browser, stop := chromedp.NewContext(alloc)
	t.Cleanup(stop)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return browser
}

// tab is one page of the shared browser, with the errors its console
// reported.
type tab struct {
	ctx context.Context
	mu  sync.Mutex
	// errs are console.error calls, uncaught exceptions and the
	// browser's own error entries but for 401 answers: the page asks for
	// the pools before a token is typed, to learn whether the service
	// needs one, and says so on the page.
	errs []string
}

// newTab opens a tab of browser at 1280×800, closed when t ends.
func newTab(t *testing.T, browser context.Context) *tab {
	t.Helper()
	tb := &tab{}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithListener(tb.listen))
	t.Cleanup(cancel)
	tb.ctx = ctx
	// The first call opens the tab, which lives as long as its context:
	// tb.ctx itself, not a child with a timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return tb
}

// listen records the console's errors.
func (tb *tab) listen(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			tb.errs = append(tb.errs, "console.error: "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		tb.errs = append(tb.errs, "exception: "+ev.ExceptionDetails.Text+" "+exceptionText(ev.ExceptionDetails))
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError && !strings.Contains(ev.Entry.Text, "status of 401") {
			tb.errs = append(tb.errs, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
		}
	}
}

// run runs the steps in the tab, failing t on an error; each step may
// take a minute at most.
func (tb *tab) run(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// result runs one action that returns a value.
func result[T any](t *testing.T, tb *tab, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// eval evaluates js in the page.
func eval[T any](t *testing.T, tb *tab, js string) T {
	t.Helper()
	return result(t, tb, chromedp.Evaluate[T](js))
}

// text returns the text of the element sel.
func text(t *testing.T, tb *tab, sel string) string {
	t.Helper()
	return result(t, tb, chromedp.Text(chromedp.CSS(sel)))
}

// until evaluates the boolean js until it holds, and fails t after d.
func (tb *tab) until(t *testing.T, what, js string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if eval[bool](t, tb, js) {
			return time.Since(start)
		}
		if time.Since(start) > d {
			state := eval[string](t, tb, `JSON.stringify({message: document.getElementById('message').textContent, live: document.getElementById('live').textContent, layout: (window.dispatcherUI||{}).layout})`)
			t.Fatalf("%s: not within %v; page: %.600s", what, d, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noErrors fails t if the tab's console reported errors.
func (tb *tab) noErrors(t *testing.T) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, e := range tb.errs {
		t.Errorf("console: %s", e)
	}
}

// apiCall sends one request to the service with a token, failing t unless it
// is answered want.
func apiCall(t *testing.T, method, url, token, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: got %d, want %d", method, url, resp.StatusCode, want)
	}
}

// barColour is the JS that reads, as "r,g,b", the colour drawn on the
// canvas in the middle of a Scale's bar (of its outstanding part when that
// is 4 px high, else of its base load), then the colour the page meant
// there.
const barColour = `(() => {
  const ui = window.dispatcherUI, c = document.getElementById('bars');
  const b = ui.layout.find((b) => b.compId === %q);
  if (!b) return '';
  const out = b.base - b.top >= 4;
  const y = out ? (b.top + b.base) / 2 : (b.base + b.bottom) / 2;
  const k = c.width / c.getBoundingClientRect().width;
  const px = c.getContext('2d').getImageData(Math.round((b.x + b.w / 2) * k), Math.round(y * k), 1, 1).data;
  const meant = out ? 'rgb(' + [1, 3, 5].map((i) => parseInt(b.colour.slice(i, i + 2), 16)).join(',') + ')' : b.tint;
  return px[0] + ',' + px[1] + ',' + px[2] + ' ' + meant.slice(4, -1);
})()`

// TestDashboard drives the dashboard at /ui/ in headless Chromium against
// a running service, on the embedded store and on Redis, sharing one
// browser.
func TestDashboard(t *testing.T) {
	browser := startBrowser(t)
	for _, store := range []string{"embedded", "redis"} {
		t.Run(store, func(t *testing.T) {
			env := map[string]string{"DISPATCHER_ADMIN_TOKENS": uiAdmin, "DISPATCHER_CLIENT_TOKENS": uiClient}
			if store == "redis" {
				env["DISPATCHER_REDIS_URL"] = redistest.Start(t).URL()
			}
			addr, _ := startRun(t, nil, env)
			testDashboard(t, browser, "http://"+addr, store == "embedded")
		})
	}
}

func testDashboard(t *testing.T, browser context.Context, base string, screenshot bool) {
	apiCall(t, http.MethodPut, base+"/v1/pools/eu", uiAdmin, `{}`, http.StatusCreated)
	apiCall(t, http.MethodPut, base+"/v1/pools/us", uiAdmin, `{"strategy":"round-robin"}`, http.StatusCreated)
	for i, count := range []int{1, 5, 12, 3, 8} {
		apiCall(t, http.MethodPut, fmt.Sprintf("%s/v1/pools/eu/scales/S%d", base, i+1), uiAdmin, fmt.Sprintf(`{"orderCount":%d,"maxOrders":%d}`, count, 40+i), http.StatusCreated)
	}

	tb := newTab(t, browser)
	// The user types the client token: the list of pools follows.
	tb.run(t,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#message`)),
	)
	if msg := text(t, tb, `#message`); !strings.Contains(msg, "needs a token") {
		t.Errorf("before a token is typed: got message %q, want that the service needs a token", msg)
	}
	tb.run(t,
		chromedp.SendKeys(chromedp.CSS(`#token`), uiClient),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pools a[href="#/pool/eu"]`)),
	)
	rows := text(t, tb, `#pools`)
	if !strings.Contains(rows, "eu") || !strings.Contains(rows, "round-robin") {
		t.Errorf("pool list: got %q, want eu and us (round-robin)", rows)
	}
	stored := eval[string](t, tb, `sessionStorage.getItem('dispatcher.token')`)
	if stored != uiClient {
		t.Errorf("sessionStorage token: got %q, want the token typed", stored)
	}

	// Keyboard: focus the pool's link and press Enter.
	tb.run(t, chromedp.Focus(chromedp.CSS(`#pools a[href="#/pool/eu"]`)), chromedp.KeyEvent(kb.Enter))
	tb.until(t, "the pool's Scales as bars", `window.dispatcherUI.layout.length === 5`, 10*time.Second)
	order := eval[string](t, tb, `window.dispatcherUI.layout.map((b) => b.compId).join(' ')`)
	if order != "S1 S4 S2 S5 S3" {
		t.Errorf("bars: got %q, want by orderCount S1 S4 S2 S5 S3", order)
	}
	tb.until(t, "the waterfill table", `document.getElementById('table').textContent.includes('S1')`, 10*time.Second)

	// A batch dispatched through the API shows in the bars within 2 s.
	before := eval[string](t, tb, `JSON.stringify(window.dispatcherUI.layout.find((b) => b.compId === 'S1'))`)
	orders := make([]string, 30)
	for i := range orders {
		orders[i] = fmt.Sprintf(`{"id":"o%d"}`, i)
	}
	apiCall(t, http.MethodPost, base+"/v1/pools/eu/batches", uiClient, `{"orders":[`+strings.Join(orders, ",")+`]}`, http.StatusCreated)
	took := tb.until(t, "the batch in the bars", `(() => { const s = window.dispatcherUI.snap;
	  return s.counters.dispatched === 30 && s.scales.reduce((n, sc) => n + sc.outstanding, 0) === 30 &&
	    window.dispatcherUI.layout.find((b) => b.compId === 'S1').top < JSON.parse(`+"`"+before+"`"+`).top; })()`, 2*time.Second)
	t.Logf("the batch showed in the bars %v after its 201", took.Round(time.Millisecond))
	counters := text(t, tb, `#counters`)
	if !strings.Contains(strings.Join(strings.Fields(counters), " "), "dispatched 30") {
		t.Errorf("counters: got %q, want dispatched 30", counters)
	}

	// The drawn colour of a Scale follows its state: the pixels on the
	// canvas, in the full colour or (base load) the tint.
	drawn := func() (px, meant string) {
		px, meant, _ = strings.Cut(eval[string](t, tb, fmt.Sprintf(barColour, "S3")), " ")
		return px, meant
	}
	if px, meant := drawn(); px != meant || (meant != "31,111,178" && meant != "165,197,224") {
		t.Errorf("S3 while active: drawn %s, meant %s; want the active colour 31,111,178 or its tint 165,197,224", px, meant)
	}
	apiCall(t, http.MethodPut, base+"/v1/pools/eu/scales/S3", uiAdmin, `{"state":"down"}`, http.StatusOK)
	tb.until(t, "S3 drawn as down", `window.dispatcherUI.layout.find((b) => b.compId === 'S3').colour === '#6b6b6b'`, 5*time.Second)
	if px, meant := drawn(); px != meant || (meant != "107,107,107" && meant != "196,196,196") {
		t.Errorf("S3 down: drawn %s, meant %s; want the down colour 107,107,107 or its tint 196,196,196", px, meant)
	}
	tb.until(t, "the change listed", `document.getElementById('changes').textContent.includes('S3: active → down')`, 5*time.Second)

	// Health shows too: with heartbeatTimeoutMs on the pool, S5 stops its
	// heartbeats while the others keep theirs, lapses, and its bar turns
	// the lapsed colour within a few seconds.
	barAt := func(compId string) (px, meant string) {
		px, meant, _ = strings.Cut(eval[string](t, tb, fmt.Sprintf(barColour, compId)), " ")
		return px, meant
	}
	apiCall(t, http.MethodPut, base+"/v1/pools/eu", uiAdmin, `{"heartbeatTimeoutMs":1000}`, http.StatusOK)
	start := time.Now()
	for {
		for _, s := range []string{"S1", "S2", "S3", "S4"} {
			apiCall(t, http.MethodPost, base+"/v1/pools/eu/scales/"+s+"/heartbeat", uiClient, `{}`, http.StatusOK)
		}
		if eval[bool](t, tb, `window.dispatcherUI.layout.find((b) => b.compId === 'S5').colour === '#d4622a'`) {
			break
		}
		if time.Since(start) > 8*time.Second {
			t.Fatalf("S5 not drawn as lapsed 8 s after heartbeats were turned on without its heartbeat; layout: %s",
				eval[string](t, tb, `JSON.stringify(window.dispatcherUI.layout)`))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("S5 drawn as lapsed %v after heartbeatTimeoutMs 1000 was set", time.Since(start).Round(time.Millisecond))
	if px, meant := barAt("S5"); px != meant || (meant != "212,98,42" && meant != "238,192,170") {
		t.Errorf("S5 lapsed: drawn %s, meant %s; want the lapsed colour 212,98,42 or its tint 238,192,170", px, meant)
	}
	for _, s := range []string{"S1", "S2", "S4"} {
		if px, meant := barAt(s); px != meant || (meant != "31,111,178" && meant != "165,197,224") {
			t.Errorf("%s heartbeating: drawn %s, meant %s; want the active colour 31,111,178 or its tint 165,197,224", s, px, meant)
		}
	}
	tb.until(t, "the lapse listed", `document.getElementById('changes').textContent.includes('S5: up → lapsed')`, 5*time.Second)

	// Arrow keys pick a Scale on the canvas and describe it.
	tb.run(t, chromedp.Focus(chromedp.CSS(`#bars`)), chromedp.KeyEvent(kb.End))
	picked := text(t, tb, `#picked`)
	if !strings.Contains(picked, "orderCount") {
		t.Errorf("the Scale picked with End: got %q, want its description", picked)
	}

	// Readable contrast: every text against its background, 4.5:1 at least.
	contrast := eval[string](t, tb, contrastJS)
	if contrast != "" {
		t.Errorf("text below 4.5:1 contrast: %s", contrast)
	}
	if screenshot {
		shoot(t, tb, base)
	}

	// Phone width: nothing wider than the window, the bars still drawn.
	tb.run(t, chromedp.EmulateViewport(390, 844))
	// The bars are drawn again at the new width once the canvas's pixels
	// match its size.
	tb.until(t, "the page at phone width", `(() => { const c = document.getElementById('bars'), w = c.getBoundingClientRect().width;
	  return document.documentElement.scrollWidth <= window.innerWidth && w > 300 && c.width === Math.round(w * devicePixelRatio); })()`, 5*time.Second)
	// More Scales than pixels: Scales that share a pixel column are one
	// bar in the most alarming colour among them, so that one down Scale
	// among 1,000 active ones still shows at phone width.
	if got := eval[string](t, tb, mergedJS); got != "shared 107,107,107 others 31,111,178" {
		t.Errorf("1,000 Scales at 390 px, M500 down: got %q, want M500's column shared and drawn down, a column of active ones active", got)
	}
	// "Scales as a table", opened: a row per Scale of the snapshot (up
	// to 100 at a time).
	tb.run(t, chromedp.Click(chromedp.CSS(`#scale-details summary`)))
	tb.until(t, "Scales as a table", `(() => { const r = document.getElementById('scale-rows').rows, s = window.dispatcherUI.snap.scales;
	  return r.length === s.length && [...r].every((tr, i) => tr.cells[0].textContent === s[i].compId && tr.cells[2].textContent === (s[i].health || 'up')) &&
	    document.getElementById('rows-range').textContent === 'Scales 1–5 of the 5 shown above' && document.getElementById('rows-next').disabled; })()`, 5*time.Second)
	tb.noErrors(t)

	// A wrong token: a clear message, not a blank page.
	wrong := newTab(t, browser)
	wrong.run(t,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), "not-a-valid-token-at-all"),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#message`)),
	)
	msg := text(t, wrong, `#message`)
	if !strings.Contains(msg, "token was refused") {
		t.Errorf("with a wrong token: got message %q, want it to say the token was refused", msg)
	}
	wrong.noErrors(t)
}

// mergedJS draws a made-up snapshot of 1,000 Scales of orderCount 10, M500
// down and the rest active, and reads the colours drawn in the middle of
// M500's column and of M100's, then draws the real snapshot again. It says
// "shared" when M500's column holds other Scales too.
const mergedJS = `(() => {
  const ui = window.dispatcherUI, c = document.getElementById('bars'), real = ui.snap;
  const scales = [];
  for (let i = 0; i < 1000; i++) scales.push({compId: 'M' + i, state: i === 500 ? 'down' : 'active', orderCount: 10, outstanding: 10, baseLoad: 0, maxOrders: 0, weight: 1});
  ui.snap = Object.assign({}, real, {scales, histogram: null, scaleCount: 1000});
  ui.redraw();
  const k = c.width / c.getBoundingClientRect().width;
  const at = (b) => c.getContext('2d').getImageData(Math.floor((b.x + 0.5) * k), Math.round((b.top + b.bottom) / 2 * k), 1, 1).data.slice(0, 3).join(',');
  const m = ui.layout[500], shared = ui.layout.filter((b) => b.x === m.x).length > 1;
  const out = (shared ? 'shared ' : 'alone ') + at(m) + ' others ' + at(ui.layout[100]);
  ui.snap = real;
  ui.redraw();
  return out;
})()`

// shoot writes docs/dashboard.png (1280×800) when DISPATCHER_SCREENSHOT
// is set, with a livelier pool than the test's.
func shoot(t *testing.T, tb *tab, base string) {
	if os.Getenv("DISPATCHER_SCREENSHOT") == "" {
		return
	}
	for i := range 40 {
		apiCall(t, http.MethodPut, fmt.Sprintf("%s/v1/pools/eu/scales/W%02d", base, i), uiAdmin, fmt.Sprintf(`{"orderCount":%d}`, (i*37)%50), http.StatusCreated)
	}
	apiCall(t, http.MethodPut, base+"/v1/pools/eu/scales/W07", uiAdmin, `{"state":"draining"}`, http.StatusOK)
	for b := range 10 {
		orders := make([]string, 40)
		for i := range orders {
			orders[i] = fmt.Sprintf(`{"id":"shot-%d-%d"}`, b, i)
		}
		apiCall(t, http.MethodPost, base+"/v1/pools/eu/batches", uiClient, `{"orders":[`+strings.Join(orders, ",")+`]}`, http.StatusCreated)
		time.Sleep(400 * time.Millisecond)
	}
	tb.until(t, "the screenshot's pool", `window.dispatcherUI.layout.length === 45`, 10*time.Second)
	png := result(t, tb, chromedp.FullScreenshot(100))
	out := filepath.Join("..", "..", "docs", "dashboard.png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, len(png))
}

// contrastJS lists the elements whose text has less than 4.5:1 contrast
// against the background it is drawn on (WCAG 2 relative luminance).
const contrastJS = `(() => {
  const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  const bg = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    if (!el.offsetParent || ![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) bad.push((el.id || el.tagName) + ' ' + ratio.toFixed(2));
  }
  return bad.join(', ');
})()`

// exceptionText is the description of an exception's value, if any.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception == nil {
		return ""
	}
	return d.Exception.Description
}
