/**
 * What events cost (issue 24): the write scenarios of `npm run bench` (create; 90% GET / 10% PUT)
 * on the service with no webhook subscription, then with 2 subscriptions active (receivers on
 * loopback answering 204 at once), then with `BENCH_STREAMS` (1 000) change streams held open of a
 * type the load does not raise, then with as many admin streams fed every event; the peak RSS;
 * and issue 24's targets (each write scenario within 15% of its figure with no subscription).
 * A run starts with no delivery waiting and is charged with sending its own: its req/s is counted
 * over the run plus the time the rest of its deliveries took to send after it (both are printed). One server process per store, wrk as in bench/throughput.ts.
 *
 *   npm run build && BENCH_SECONDS=3 tsx bench/events.ts        # a quick look
 *   npm run bench:events                                         # the full run (10 s per run)
 *   BENCH_WORKER=1 npm run bench:events                          # the background work in a worker
 *
 * With BENCH_WORKER=1 the service on core 0 serves the requests with BACKGROUND_WORK=false, and a
 * second instance on the same database, taking no requests, runs the background work (the
 * fan-out, the sender) on core 1 beside wrk and the receivers (docs/deployment.md, Background work).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { SignJWT } from 'jose'
import pg from 'pg'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000)
const POSTS = 2000
const SECRET = 'bench-secret-that-is-at-least-32-bytes-long!'
const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`
const PG_ADMIN = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SCRIPT = path.join(ROOT, 'bench/wrk/scenario.lua')
/** How long sending a run's deliveries after it may take. */
const DRAIN_WITHIN_MS = Number(process.env.BENCH_DRAIN_WITHIN_MS ?? 120_000)
/** How long opening a phase's streams may take. */
const OPEN_WITHIN_MS = Number(process.env.BENCH_OPEN_WITHIN_MS ?? 60_000)
/** The background work in an instance of its own on core 1 (BENCH_WORKER=1), the API's with BACKGROUND_WORK=false. */
const WORKER = process.env.BENCH_WORKER === '1'

interface Run { rps: number, p99: number, errors: number }

async function token (scope: string): Promise<string> {
  return await new SignJWT({ scope }).setProtectedHeader({ alg: 'HS256' }).setSubject('bench').setExpirationTime('4h').sign(new TextEncoder().encode(SECRET))
}

/** Servers on core 0, wrk and this process (the receivers, the streams' readers) on core 1, as bench/throughput.ts does. */
const PINNED = os.cpus().length > 1 && spawnSync('sh', ['-c', 'command -v taskset']).status === 0

/**
 * One wrk run. Asynchronous: this process's receivers answer deliveries and its stream clients
 * read while wrk runs (a synchronous run would stall them, and the service would buffer for
 * readers that never read).
 */
async function wrk (port: number, args: string[]): Promise<Run> {
  const argv = ['-t1', '-c64', `-d${SECONDS}s`, '--timeout', '10s', '-s', SCRIPT, `http://127.0.0.1:${port}`, '--', ...args]
  const child = PINNED ? spawn('taskset', ['-c', '1', 'wrk', ...argv]) : spawn('wrk', argv)
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d })
  const code = await new Promise<number | null>(resolve => child.once('exit', resolve))
  if (code !== 0) throw new Error(`wrk exited with ${code}`)
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { requests: number, duration_us: number, p99_us: number, connect: number, read: number, write: number, status: number, timeout: number }
  return { rps: r.requests / (r.duration_us / 1e6), p99: r.p99_us / 1000, errors: r.connect + r.read + r.write + r.status + r.timeout }
}

async function start (env: Record<string, string>, core = 0): Promise<{ child: ChildProcess, port: number, metrics: number }> {
  const port = 3990 + Math.floor(Math.random() * 500)
  const metrics = port + 1000
  const node = [process.execPath, '--max-semi-space-size=8', '--heap-growing-percent=50', path.join(ROOT, 'dist/blog.js'), 'serve']
  const child = spawn(PINNED ? 'taskset' : node[0]!, PINNED ? ['-c', String(core), ...node] : node.slice(1), {
    env: { ...process.env, ...env, PORT: String(port), METRICS_PORT: String(metrics), AUTH_JWT_SECRET: SECRET, BOOTSTRAP_ADMIN_KEY: 'false', RATE_LIMIT_MAX: '0', LOG_LEVEL: 'warn', WEBHOOK_SECRET, WEBHOOK_ALLOW_LOOPBACK: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  for (let i = 0; i < 3000; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return { child, port, metrics }
    } catch {}
    await sleep(10)
  }
  throw new Error('the service did not start')
}

function rssMiB (pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
}

/** Webhook receivers on loopback: 204 at once, counting what they got. */
async function receivers (): Promise<{ url: (i: number) => string, count: () => number, close: () => void }> {
  let n = 0
  const server = http.createServer((req, res) => { req.resume(); req.on('end', () => { n++; res.writeHead(204).end() }) })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: i => `http://127.0.0.1:${port}/hook${i}`, count: () => n, close: () => { server.closeAllConnections(); server.close() } }
}

async function measure (label: string, dbEnv: Record<string, string>, say: (s: string) => void): Promise<void> {
  const { child, port, metrics } = await start(WORKER ? { ...dbEnv, BACKGROUND_WORK: 'false' } : dbEnv)
  const worker = WORKER ? await start(dbEnv, 1) : null
  const openStreams = async () => Number(/^event_streams_open (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text())?.[1] ?? 0)
  const base = `http://127.0.0.1:${port}`
  const writer = await token('posts:write')
  const admin = await token('admin')
  const rx = await receivers()
  const streams: http.ClientRequest[] = []
  try {
    for (let i = 0; i < POSTS; i += 50) {
      await Promise.all(Array.from({ length: 50 }, async (_, j) => await (await fetch(`${base}/posts`, { method: 'POST', headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: `seed ${i + j}`, content: 'x'.repeat(2000) }) })).arrayBuffer()))
    }
    const scenarios: [string, string[]][] = [['create', ['create', writer]], ['mixed 90% GET / 10% PUT', ['mixed', String(POSTS), writer]]]
    const rows: string[] = []
    const rps = new Map<string, number>()
    // Deliveries still to send (every instance reports the deployment's queue).
    const pending = async () => Number(/^webhook_deliveries_pending (\d+)/m.exec(await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text())?.[1] ?? 0)
    /** Waits until every delivery is sent; how long that took, in seconds. */
    const drained = async (): Promise<number> => {
      const started = performance.now()
      while (await pending() > 0) {
        if (performance.now() - started > DRAIN_WITHIN_MS) throw new Error(`deliveries still pending after ${DRAIN_WITHIN_MS} ms`)
        // Each look counts the queue (an index scan): not too often.
        await sleep(250)
      }
      return (performance.now() - started) / 1000
    }
    const runAll = async (setting: string) => {
      for (const [name, args] of scenarios) {
        // Warm-up, not counted; then its deliveries are sent, so the run starts with none waiting.
        await wrk(port, args)
        await drained()
        const r = await wrk(port, args)
        // A run is charged with sending what it queued: its writes over its time plus the time to
        // send the rest of its deliveries after it (the sender shares the core with the requests).
        const drain = await drained()
        const charged = r.rps * SECONDS / (SECONDS + drain)
        rps.set(`${name}|${setting}`, charged)
        rows.push(`| ${name} | ${setting} | ${r.rps.toFixed(0)} | ${drain.toFixed(1)} | ${charged.toFixed(0)} | ${r.p99.toFixed(1)} | ${r.errors} | ${rssMiB(child.pid!).toFixed(0)} |`)
        process.stderr.write(`  ${label} ${name} (${setting}): ${r.rps.toFixed(0)} req/s, ${drain.toFixed(1)} s to send the rest, ${charged.toFixed(0)} req/s charged\n`)
      }
    }
    await runAll('no subscription')
    for (const i of [1, 2]) {
      const res = await fetch(`${base}/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ url: rx.url(i), events: ['*'] }) })
      if (res.status !== 201) throw new Error(`subscribing failed: ${res.status} ${await res.text()}`)
    }
    await runAll('2 subscriptions')
    // Opened in steps, each one retried until it is a stream (a step too fast is shed with 503, as it should be).
    // Opening stops at a deadline: a service busy with a delivery backlog sheds new streams, and
    // the phase then runs with the streams it has (the table says how many).
    let openUntil = 0
    const openOne = async (query: string): Promise<void> => {
      while (Date.now() < openUntil) {
        const ok = await new Promise<boolean>(resolve => {
          const req = http.get(`${base}/events${query}`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${admin}` }, agent: false }, res => {
            if (res.statusCode === 200) {
              streams.push(req)
              res.resume()
              resolve(true)
            } else {
              res.resume()
              resolve(false)
            }
          })
          req.on('error', () => { resolve(false) })
          // An answer that never comes (a connection left in the accept queue) counts as a refusal.
          req.setTimeout(5000, () => { req.destroy() })
        })
        if (ok) return
        await sleep(100)
      }
    }
    const openStreamsOf = async (query: string): Promise<number> => {
      openUntil = Date.now() + OPEN_WITHIN_MS
      for (let i = 0; i < STREAMS && Date.now() < openUntil; i += 25) await Promise.all(Array.from({ length: Math.min(25, STREAMS - i) }, async () => { await openOne(query) }))
      return await openStreams()
    }
    // Streams held open that the writes do not feed (a type the load does not raise): what holding them costs.
    const held = await openStreamsOf('?types=export.failed')
    await sleep(1000)
    rows.push(`| (idle) | 2 subscriptions, ${held} streams of another type open | | | | | | ${rssMiB(child.pid!).toFixed(0)} |`)
    await runAll(`2 subscriptions, ${held} streams of another type open`)
    for (const s of streams.splice(0)) s.destroy()
    for (let i = 0; i < 100 && await openStreams() > 0; i++) await sleep(50)
    // Admin streams, fed every event of the load with its post: what feeding them costs.
    const open = await openStreamsOf('')
    await sleep(1000)
    rows.push(`| (idle) | 2 subscriptions, ${open} admin streams open | | | | | | ${rssMiB(child.pid!).toFixed(0)} |`)
    await runAll(`2 subscriptions, ${open} admin streams open`)
    say(`\n## ${label}\n\n| scenario | events | req/s during the run | s to send the rest after | req/s charged | p99 ms | errors | RSS MiB after |\n|---|---|---:|---:|---:|---:|---:|---:|\n${rows.join('\n')}`)
    say(`\nDeliveries received by the 2 receivers during the runs: ${rx.count()}.`)
    // Issue 24's targets: no write scenario more than 15% slower with events in use; the streams within the memory target.
    const peak = Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid!}/status`, 'utf8'))?.[1] ?? 0) / 1024
    const lines = scenarios.flatMap(([name]) => ['2 subscriptions', `2 subscriptions, ${held} streams of another type open`, `2 subscriptions, ${open} admin streams open`].map(setting => {
      const change = rps.get(`${name}|${setting}`)! / rps.get(`${name}|no subscription`)! - 1
      return `| ${name}, ${setting} vs no subscription | ${(100 * change).toFixed(1)}% req/s charged | ${change >= -0.15 ? 'yes' : '**no**'} |`
    }))
    lines.push(`| peak RSS with ${held} streams held, then ${open} admin streams fed, ≤ 160 MB | ${(peak * 1.048576).toFixed(0)} MB (${peak.toFixed(0)} MiB) | ${peak * 1.048576 <= 160 ? 'yes' : '**no**'} |`)
    say(`\n| target (${label}) | value | met |\n|---|---|---|\n${lines.join('\n')}`)
  } finally {
    for (const s of streams) s.destroy()
    rx.close()
    for (const c of [child, worker?.child]) {
      if (c === undefined) continue
      c.kill('SIGTERM')
      await new Promise(resolve => c.once('exit', resolve))
    }
  }
}

async function main (): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/blog.js'))) throw new Error('dist/ is missing: run npm run build first')
  const out: string[] = []
  const say = (s: string) => { out.push(s); process.stderr.write(`${s}\n`) }
  say(`# bench/events.ts — ${new Date().toISOString()}, ${os.cpus().length} cores, wrk -t1 -c64, ${SECONDS} s per run, ${STREAMS} streams` +
    (WORKER ? '; the background work in a worker on core 1 (BENCH_WORKER=1), the service with BACKGROUND_WORK=false' : ''))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-bench-events-'))
  try {
    await measure('SQLite', { DATABASE_URL: `sqlite:${path.join(dir, 'blog.db')}`, DATA_DIR: dir }, say)
    if (process.env.BENCH_PG !== '0') {
      const admin = new pg.Client({ connectionString: PG_ADMIN })
      await admin.connect()
      await admin.query('DROP DATABASE IF EXISTS blog_bench_events WITH (FORCE)')
      await admin.query('CREATE DATABASE blog_bench_events')
      await admin.end()
      const url = new URL(PG_ADMIN)
      url.pathname = '/blog_bench_events'
      await measure('PostgreSQL', { DATABASE_URL: url.toString() }, say)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  process.stdout.write(`${out.join('\n')}\n`)
}

await main()
