/**
 * Overload benchmark (`npm run bench:overload`): the service as `npm start` runs it, pinned to core
 * 0, on 10 000 posts of ~2 KB; the load from core 1. First its capacity, closed-loop (wrk, 64
 * kept-alive connections), on one request; then an open loop at 2× and 5× that capacity (a request
 * every 1/rate s whether or not the earlier ones were answered, on a free kept-alive connection or
 * a new one, as k6's constant arrival rate sends). Prints per load: what was answered 200 per
 * second (goodput) against the capacity, the answered p99, how many were shed with 503 and how
 * many got no answer within 10 s; and whether the targets are met: goodput ≥ 0.8× the capacity,
 * answered p99 ≤ 1 s, nothing unanswered, and nothing shed in the closed loop.
 *
 * The request is signed in (a bearer JWT): the public answers cache keeps an anonymous list and
 * answers it again in microseconds, and what overloads a service is work, which a signed-in list is
 * every time (OVERLOAD_ANONYMOUS=1 sends it without the header).
 *
 *   npm run build && npm run bench:overload
 *   OVERLOAD_PATH='/posts/5' OVERLOAD_SECONDS=10 npm run bench:overload
 *   BENCH_BASELINE=../before npm run bench:overload     # an earlier build, in the same run
 */
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { type OpenLoopResult, quantile } from '../test/raw-http.ts'
import { freePort } from './net.ts'
import { pin, pinned } from './cores.ts'
import { JWT_SECRET, writerToken } from './seed.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const PATH = process.env.OVERLOAD_PATH ?? '/posts?limit=100&fields=id,title,content'
const SECONDS = Number(process.env.OVERLOAD_SECONDS ?? 8)
const MULTIPLES = (process.env.OVERLOAD_MULTIPLES ?? '2,5').split(',').map(Number)
const BASELINE = process.env.BENCH_BASELINE === undefined || process.env.BENCH_BASELINE === '' ? undefined : path.resolve(process.env.BENCH_BASELINE)
/** The Authorization header of every request ('' with OVERLOAD_ANONYMOUS=1). */
const AUTHORIZATION = process.env.OVERLOAD_ANONYMOUS === '1' ? '' : `Bearer ${await writerToken()}`
const FILLER = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(36)

/**
 * The open loop, in a process of its own on raw sockets (Node's http client and a timer per
 * request could not send 2 500 requests a second on one busy core: against a server answering in
 * microseconds it measured p50 1.1 s). Every millisecond it sends the requests due by then, each
 * on a free kept-alive connection or a new one; a request's time runs from when it was due, so a
 * late send counts against the server as a client of that rate would see it.
 */
const OPEN_LOOP = `
const net = require('node:net')
const [port, rate, durationMs, path, timeoutMs, authorization] = [Number(process.argv[1]), Number(process.argv[2]), Number(process.argv[3]), process.argv[4], Number(process.argv[5]), process.argv[6]]
const request = Buffer.from('GET ' + path + ' HTTP/1.1\\r\\nHost: x\\r\\n' + (authorization === '' ? '' : 'Authorization: ' + authorization + '\\r\\n') + '\\r\\n')
const statuses = {}, times = {}
let timedOut = 0, sent = 0, done = 0
const free = []
const total = Math.round(rate * durationMs / 1000)
const start = performance.now()
function finish (c, status) {
  const ms = performance.now() - c.due
  statuses[status] = (statuses[status] ?? 0) + 1
  ;(times[status] ??= []).push(ms)
  c.due = -1
  done++
}
function open () {
  const c = { socket: net.connect(port, '127.0.0.1'), head: null, left: 0, status: '', close: false, due: -1 }
  c.socket.setNoDelay(true)
  // Bodies are counted, not kept: answers of 200 KB at hundreds a second, parsed by appending
  // strings, made this client the bottleneck on a busy machine.
  const answered = () => {
    if (c.due >= 0) finish(c, c.status)
    if (c.close) { c.socket.destroy(); return }
    free.push(c)
  }
  c.socket.on('data', d => {
    let off = 0
    while (off < d.length) {
      if (c.left > 0) {
        const n = Math.min(c.left, d.length - off)
        c.left -= n
        off += n
        if (c.left === 0) answered()
        continue
      }
      const before = c.head === null ? 0 : c.head.length
      c.head = c.head === null ? d.subarray(off) : Buffer.concat([c.head, d.subarray(off)])
      const end = c.head.indexOf('\\r\\n\\r\\n')
      if (end === -1) return
      const text = c.head.toString('latin1', 0, end + 2)
      const m = /\\r\\ncontent-length: *(\\d+)/i.exec(text)
      c.status = text.slice(9, 12)
      c.close = /\\r\\nconnection: *close/i.test(text)
      off += end + 4 - before
      c.head = null
      c.left = m === null ? 0 : Number(m[1])
      if (c.left === 0) answered()
    }
  })
  c.socket.on('error', () => {})
  c.socket.on('close', () => { if (c.due >= 0) { statuses.error = (statuses.error ?? 0) + 1; c.due = -1; done++ } })
  return c
}
function send (due) {
  let c = free.pop()
  while (c !== undefined && c.socket.destroyed) c = free.pop()
  c ??= open()
  c.due = due
  c.sentAt = performance.now()
  c.socket.write(request)
  const own = c
  setTimeout(() => { if (own.due === due) { timedOut++; own.due = -1; done++; own.socket.destroy() } }, timeoutMs).unref()
}
const tick = setInterval(() => {
  const now = performance.now()
  while (sent < total && start + sent * 1000 / rate <= now) send(start + (sent++) * 1000 / rate)
  if (sent >= total) clearInterval(tick)
}, 1)
const check = setInterval(() => {
  if (sent >= total && done >= total) {
    clearInterval(check)
    process.stdout.write(JSON.stringify({ statuses, times, timedOut, sent }), () => { process.exit(0) })
  }
}, 50)
`

async function openLoop (port: number, rate: number, durationMs: number, path: string, timeoutMs = 10_000): Promise<OpenLoopResult> {
  return await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', OPEN_LOOP, String(port), String(rate), String(durationMs), path, String(timeoutMs), AUTHORIZATION], { maxBuffer: 256 * 1024 * 1024 }, (err, stdout) => {
      if (err) reject(err)
      else resolve(JSON.parse(stdout) as OpenLoopResult)
    })
  })
}

function seed (root: string, file: string): void {
  execFileSync(process.execPath, [path.join(root, 'dist/blog.js'), 'migrate'], { env: { ...process.env, DATABASE_URL: `sqlite:${file}` } })
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.prepare(`
    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 10000)
    INSERT INTO posts (title, content, status, author, created_at, updated_at, revision, slug, published_at, tags, content_html, excerpt)
    SELECT 'Post ' || i, 'Post number ' || i || '. ' || ?, 'published', 'bench', at, at, 1, 'post-' || i, at, '[]', '<p>' || ? || '</p>', substr(?, 1, 200)
    FROM (SELECT i, strftime('%Y-%m-%dT%H:%M:%fZ', 1577836800 + i, 'unixepoch') AS at FROM seq)`).run(FILLER, FILLER, FILLER)
  db.exec('INSERT INTO post_slugs (slug, post_id) SELECT slug, id FROM posts')
  db.exec('ANALYZE')
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

interface Server { child: ChildProcess, port: number, log: string }

async function start (root: string, dir: string, name: string): Promise<Server> {
  const file = path.join(dir, `${name}.db`)
  seed(root, file)
  const port = await freePort()
  const log = path.join(dir, `${name}.log`)
  const out = fs.openSync(log, 'w')
  const script = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  const [cmd, args] = pin(0, 'sh', ['-c', `exec ${script}`])
  const child = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, PORT: String(port), SITE_PORT: String(await freePort()), DATABASE_URL: `sqlite:${file}`, DATA_DIR: dir, RATE_LIMIT_MAX: '1000000000', BOOTSTRAP_ADMIN_KEY: 'false', AUTH_JWT_SECRET: JWT_SECRET },
    stdio: ['ignore', out, 'inherit'],
  })
  fs.closeSync(out)
  for (let i = 0; i < 2000; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return { child, port, log }
    } catch {}
    await sleep(5)
  }
  throw new Error(`${name} did not start`)
}

/** Closed loop with wrk (64 connections, kept alive): the capacity, and how many answers were not 200. */
function capacity (port: number, seconds: number): { rate: number, errors: number } {
  const script = path.join(dir0, 'count.lua')
  const [cmd, args] = pin(1, 'wrk', ['-t1', '-c64', `-d${seconds}s`, '--timeout', '10s', '-s', script, ...(AUTHORIZATION === '' ? [] : ['-H', `Authorization: ${AUTHORIZATION}`]), `http://127.0.0.1:${port}${PATH}`])
  const out = execFileSync(cmd, args, { encoding: 'utf8' })
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
  const errors = Number(/"errors":(\d+)/.exec(out)?.[1] ?? 0)
  return { rate, errors }
}

/** The service's shed answers in its log (warnings about overload), counted. */
function shedInLog (log: string): number {
  return fs.readFileSync(log, 'utf8').split('\n').filter(l => l.includes('SERVICE_UNAVAILABLE') || l.includes('"shed"')).length
}

// The open-loop client (a child of this process) and wrk share core 1, apart from the service.
if (pinned) spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' })

const dir0 = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-overload-'))
fs.writeFileSync(path.join(dir0, 'count.lua'), `
function done (summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"errors":%d}\\n', e.connect + e.read + e.write + e.status + e.timeout))
end
`)

/**
 * One build: its capacity, then the open loops. `offeredBase`: the capacity the offered rates are
 * multiples of (the first build's, so that a baseline gets the same load; the machine's noise moves
 * a capacity measured minutes apart by more than the builds differ).
 */
async function measure (root: string, name: string, say: (s: string) => void, offeredBase?: number): Promise<{ met: boolean, capacity: number }> {
  const s = await start(root, dir0, name)
  let met = true
  let capacityRate = 0
  try {
    capacity(s.port, 2)
    const cap = capacity(s.port, SECONDS)
    capacityRate = cap.rate
    say(`\n### ${name}\n\nCapacity (closed loop, wrk -c64, ${SECONDS} s): ${cap.rate.toFixed(0)} req/s, ${cap.errors} answers not 200.\n`)
    met &&= cap.errors === 0
    say('| offered | × capacity measured first | sent | 200 | goodput req/s | × capacity | 503 | other | unanswered (10 s) | answered p50 ms | answered p99 ms |')
    say('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for (const m of MULTIPLES) {
      await sleep(1000)
      const rate = Math.round(m * (offeredBase ?? cap.rate))
      const r = await openLoop(s.port, rate, SECONDS * 1000, PATH)
      const ok = r.times['200'] ?? []
      const answered = Object.entries(r.times).flatMap(([, t]) => t)
      const other = Object.entries(r.statuses).filter(([k]) => k !== '200' && k !== '503').reduce((a, [, n]) => a + n, 0)
      const goodput = ok.length / SECONDS
      const p99 = quantile(answered, 0.99)
      met &&= goodput >= 0.8 * cap.rate && r.timedOut === 0 && p99 <= 1000 && other === 0
      say(`| ${rate} | ${m} | ${r.sent} | ${ok.length} | ${goodput.toFixed(0)} | ${(goodput / cap.rate).toFixed(2)} | ${r.statuses['503'] ?? 0} | ${other} | ${r.timedOut} | ` +
        `${quantile(answered, 0.5).toFixed(0)} | ${p99.toFixed(0)} |`)
    }
  } finally {
    s.child.kill('SIGTERM')
    await new Promise(resolve => s.child.once('exit', resolve))
  }
  say(`\nLog lines about shed requests: ${shedInLog(s.log)} (this build logs a count once a second; earlier ones a line per request).`)
  return { met, capacity: capacityRate }
}

try {
  const out: string[] = []
  const say = (s: string) => { out.push(s); process.stderr.write(`${s}\n`) }
  say(`# npm run bench:overload — ${new Date().toISOString()}`)
  say(`${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; the service ${pinned ? 'pinned to core 0, the load to core 1' : 'NOT pinned'}; ` +
    `GET ${PATH}; ${SECONDS} s per load; load average at start ${os.loadavg().map(l => l.toFixed(1)).join(' ')}`)
  const { met, capacity: base } = await measure(ROOT, 'this service', say)
  if (BASELINE !== undefined) await measure(BASELINE, `this service at ${path.basename(BASELINE)} (BENCH_BASELINE), offered the same rates`, say, base)
  say(`\nTargets (this service): goodput ≥ 0.8× capacity at ${MULTIPLES.join('× and ')}×, answered p99 ≤ 1 s, 0 unanswered, 0 errors in the closed loop: ${met ? 'met' : '**not met**'}.`)
  process.stdout.write(`${out.join('\n')}\n`)
} finally {
  fs.rmSync(dir0, { recursive: true, force: true })
}
