/**
 * Where read one's p99 goes (`npm run build && npx tsx bench/tail.ts`): the service as `npm start`
 * runs it, and variants of it, each on its own copy of the 10 000 posts of `npm run bench`, pinned
 * to core 0, driven in turn by wrk (read one, 64 connections) pinned to core 1, the variants
 * interleaved over TAIL_ROUNDS rounds. Inside each server, loaded with bench/tail-probe.mjs over
 * exactly the measured window: the event loop's delay histogram (perf_hooks
 * monitorEventLoopDelay, 1 ms resolution), every garbage collection (kind, pause), the loop's
 * utilisation, CPU and memory; from the service's log, its own time per request (`duration_ms`,
 * onRequest to the answer). wrk's p50/p99 beside them. In-process figures hold on a shared machine
 * where req/s does not. Last, each server's memory at idle (2 s after the load), split by V8's heap spaces.
 *
 *   TAIL_SECONDS=10 TAIL_ROUNDS=3 npx tsx bench/tail.ts
 *   TAIL_VARIANTS='service;no queue;no log' npx tsx bench/tail.ts     # these only (names below)
 *   BENCH_BASELINE=../before npx tsx bench/tail.ts                       # and an earlier build ('baseline')
 *
 * Variants: `bare` (bench/bare-server.ts, the bare ceiling), `floor` (bench/bare-fastify-server.ts
 * with BENCH_FLOOR=1, as npm run bench starts it: through tsx), `service`, `no queue`
 * (OVERLOAD_MAX_WAIT_MS=0: no admission queue), `no bound` (OVERLOAD_MAX_IN_FLIGHT=0), `no log`
 * (LOG_LEVEL=warn: no request line), `semi 16` / `semi 32` (the start script's
 * --max-semi-space-size at 16 or 32 MiB), `growing default` (without --heap-growing-percent),
 * `baseline` (BENCH_BASELINE's build as it starts).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { seedBare } from './bare-server.ts'
import { FILLER, POSTS, ROOT, seedSqlite, SERVICE_ENV } from './seed.ts'
import { SCRIPT, wrkSummary } from './wrk.ts'
import { freePort } from './net.ts'
import { pin } from './cores.ts'

const SECONDS = Number(process.env.TAIL_SECONDS ?? 10)
const ROUNDS = Number(process.env.TAIL_ROUNDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const BASELINE = process.env.BENCH_BASELINE === undefined || process.env.BENCH_BASELINE === '' ? undefined : path.resolve(process.env.BENCH_BASELINE)
const PROBE = path.join(ROOT, 'bench/tail-probe.mjs')
const COMMON = SERVICE_ENV

interface Variant { name: string, root?: string, env?: Record<string, string>, flags?: (start: string) => string, bare?: boolean, floor?: boolean }
const VARIANTS: Variant[] = [
  { name: 'bare', bare: true },
  { name: 'floor', floor: true, env: { BENCH_FLOOR: '1' } },
  { name: 'service' },
  { name: 'no queue', env: { OVERLOAD_MAX_WAIT_MS: '0' } },
  { name: 'no bound', env: { OVERLOAD_MAX_IN_FLIGHT: '0' } },
  { name: 'no log', env: { LOG_LEVEL: 'warn' } },
  { name: 'semi 16', flags: s => s.replace(/--max-semi-space-size=\d+/, '--max-semi-space-size=16') },
  { name: 'semi 32', flags: s => s.replace(/--max-semi-space-size=\d+/, '--max-semi-space-size=32') },
  { name: 'growing default', flags: s => s.replace(/ --heap-growing-percent=\d+/, '') },
  ...(BASELINE === undefined ? [] : [{ name: 'baseline', root: BASELINE }]),
]
const ONLY = process.env.TAIL_VARIANTS === undefined || process.env.TAIL_VARIANTS === '' ? null : new Set(process.env.TAIL_VARIANTS.split(';').map(s => s.trim()))

interface Probe {
  seconds: number
  loopDelay: { p50: number, p90: number, p99: number, p999: number, max: number, mean: number, count: number }
  served: { p50: number | null, p99: number | null, p999: number | null, max: number | null, n: number }
  utilization: number
  gc: Record<string, { count: number, totalMs: number, maxMs: number, pauses: number[] }>
  cpuSeconds: number
  memory: NodeJS.MemoryUsage
  heapSpaces: Record<string, { used: number, size: number }>
}
interface Server { variant: Variant, child: ChildProcess, port: number, log: string, probe: string }
interface Sample { requests: number, rps: number, p50: number, p99: number, errors: number, probe: Probe, own: { p50: number, p99: number, p999: number, max: number, n: number } }
const num = (n: number | null): number => n ?? NaN

async function start (v: Variant, dir: string): Promise<Server> {
  const port = await freePort()
  const db = path.join(dir, `${v.name.replaceAll(' ', '-')}.db`)
  const log = path.join(dir, `${v.name.replaceAll(' ', '-')}.log`)
  const probe = path.join(dir, `${v.name.replaceAll(' ', '-')}.probe`)
  let command: string
  if (v.bare === true) {
    seedBare(db, POSTS, FILLER)
    command = `node --import tsx --import ${PROBE} ${path.join(ROOT, 'bench/bare-server.ts')}`
  } else if (v.floor === true) {
    seedSqlite(db, POSTS)
    command = `node --import tsx --import ${PROBE} ${path.join(ROOT, 'bench/bare-fastify-server.ts')}`
  } else {
    const root = v.root ?? ROOT
    seedSqlite(db, POSTS, root)
    const scripts = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts
    const startCmd = (v.flags ?? (s => s))(scripts.start)
    if (!startCmd.startsWith('node ')) throw new Error(`the start script is not a node command: ${startCmd}`)
    command = `node --import ${PROBE} ${startCmd.slice('node '.length)}`
  }
  const [cmd, args] = pin(0, 'sh', ['-c', `exec ${command}`])
  const fd = fs.openSync(log, 'w')
  const child = spawn(cmd, args, {
    cwd: v.root ?? ROOT,
    env: { ...process.env, ...COMMON, ...v.env, PORT: String(port), DATABASE_URL: `sqlite:${db}`, BENCH_DB: db, DATA_DIR: dir, TAIL_PROBE_OUT: probe },
    stdio: ['ignore', fd, 'inherit'],
  })
  fs.closeSync(fd)
  for (let i = 0; i < 3000; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status < 500) return { variant: v, child, port, log, probe }
    } catch {}
    await sleep(5)
  }
  child.kill()
  throw new Error(`${v.name} did not start`)
}

function wrk (s: Server, seconds: number): { requests: number, seconds: number, p50: number, p99: number, errors: number } {
  const [cmd, args] = pin(1, 'wrk', ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s', '-s', SCRIPT, `http://127.0.0.1:${s.port}`, '--', 'read', String(POSTS)])
  const out = execFileSync(cmd, args, { encoding: 'utf8' })
  return wrkSummary(out)
}

/** Closes the probe's window: the line SIGUSR2 makes it append (the last of its file). */
async function window (s: Server): Promise<Probe> {
  const before = fs.existsSync(s.probe) ? fs.readFileSync(s.probe, 'utf8').split('\n').filter(Boolean).length : 0
  s.child.kill('SIGUSR2')
  for (let i = 0; i < 400; i++) {
    const lines = fs.existsSync(s.probe) ? fs.readFileSync(s.probe, 'utf8').split('\n').filter(Boolean) : []
    if (lines.length > before) return JSON.parse(lines.at(-1)!) as Probe
    await sleep(5)
  }
  throw new Error(`${s.variant.name}: no probe line`)
}

const quantile = (sorted: number[], q: number): number => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

/** The service's own durations of the 200s its log holds past `offset`. */
function ownDurations (s: Server, offset: number): Sample['own'] {
  if (s.variant.bare === true || s.variant.env?.LOG_LEVEL === 'warn') return { p50: NaN, p99: NaN, p999: NaN, max: NaN, n: 0 }
  const text = fs.readFileSync(s.log, 'utf8').slice(offset)
  const d: number[] = []
  for (const m of text.matchAll(/"status":200,"duration_ms":([\d.]+)/g)) d.push(Number(m[1]))
  d.sort((a, b) => a - b)
  return { p50: quantile(d, 0.5), p99: quantile(d, 0.99), p999: quantile(d, 0.999), max: d.at(-1) ?? NaN, n: d.length }
}

async function measure (s: Server): Promise<Sample> {
  await window(s)
  const offset = s.variant.bare === true ? 0 : fs.statSync(s.log).size
  const r = wrk(s, SECONDS)
  const probe = await window(s)
  return { requests: r.requests, rps: r.requests / r.seconds, p50: r.p50, p99: r.p99, errors: r.errors, probe, own: ownDurations(s, offset) }
}

const f1 = (n: number) => Number.isNaN(n) ? '' : n.toFixed(1)
const f2 = (n: number) => Number.isNaN(n) ? '' : n.toFixed(2)

async function main (): Promise<void> {
  if (spawnSync('sh', ['-c', 'command -v wrk && command -v taskset']).status !== 0) throw new Error('needs wrk and taskset')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-tail-'))
  const servers: Server[] = []
  try {
    const variants = VARIANTS.filter(v => ONLY === null || ONLY.has(v.name))
    for (const v of variants) servers.push(await start(v, dir))
    for (const s of servers) wrk(s, 3)
    const samples = new Map<string, Sample[]>()
    for (let round = 1; round <= ROUNDS; round++) {
      for (const s of round % 2 === 1 ? servers : [...servers].reverse()) {
        const sample = await measure(s)
        samples.set(s.variant.name, [...(samples.get(s.variant.name) ?? []), sample])
        const sc = sample.probe.gc.scavenge
        const mc = sample.probe.gc.markCompact
        process.stderr.write(`round ${round} ${s.variant.name}: ${sample.rps.toFixed(0)} req/s, wrk p50 ${f1(sample.p50)} p99 ${f1(sample.p99)} ms; loop delay p99 ${f1(sample.probe.loopDelay.p99)} max ${f1(sample.probe.loopDelay.max)} ms; ` +
          `scavenges ${sc?.count ?? 0} (max ${f1(sc?.maxMs ?? 0)} ms), mark-compacts ${mc?.count ?? 0} (max ${f1(mc?.maxMs ?? 0)} ms); read → answered p99 ${f1(num(sample.probe.served.p99))} ms, CPU ${(1e6 * sample.probe.cpuSeconds / sample.requests).toFixed(0)} µs/req, GC ${(100 * Object.values(sample.probe.gc).reduce((a, g) => a + g.totalMs, 0) / 1000 / sample.probe.seconds).toFixed(1)}%, own p50 ${f2(sample.own.p50)} p99 ${f2(sample.own.p99)} ms\n`)
      }
    }
    const lines = [
      `# bench/tail.ts — ${new Date().toISOString()}`,
      `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; servers on core 0, wrk on core 1 (-c${CONNECTIONS}); read one; ${ROUNDS} rounds × ${SECONDS} s, interleaved; load average ${os.loadavg().map(l => l.toFixed(1)).join(' ')}`,
      '',
      '| variant | req/s | wrk p50 ms | wrk p99 ms (rounds) | loop delay p50 / p99 / p99.9 / max ms | loop busy | scavenges /s, mean / max pause ms | mark-compacts (all rounds), max pause ms | GC share of wall time | read → answered p50 / p99 / p99.9 / max ms | own time (onRequest → answer) p50 / p99 / p99.9 / max ms | CPU µs/req |',
      '|---|---:|---:|---|---|---:|---|---|---:|---|---|---:|',
    ]
    for (const s of servers) {
      const xs = samples.get(s.variant.name)!
      const sum = (f: (x: Sample) => number) => xs.reduce((a, x) => a + f(x), 0)
      const wall = sum(x => x.probe.seconds)
      const gc = (kind: string) => ({ count: sum(x => x.probe.gc[kind]?.count ?? 0), total: sum(x => x.probe.gc[kind]?.totalMs ?? 0), max: Math.max(0, ...xs.map(x => x.probe.gc[kind]?.maxMs ?? 0)) })
      const sc = gc('scavenge')
      const mc = gc('markCompact')
      const inc = gc('incremental')
      const gcMs = sc.total + mc.total + inc.total + gc('weakCallbacks').total
      const med = (f: (x: Sample) => number) => quantile(xs.map(f).sort((a, b) => a - b), 0.5)
      const worst = (f: (x: Sample) => number) => Math.max(...xs.map(f))
      lines.push(`| ${s.variant.name} | ${(sum(x => x.requests) / sum(x => x.requests / x.rps)).toFixed(0)} | ${f1(med(x => x.p50))} | ${f1(worst(x => x.p99))} (${xs.map(x => f1(x.p99)).join(', ')}) | ` +
        `${f1(med(x => x.probe.loopDelay.p50))} / ${f1(worst(x => x.probe.loopDelay.p99))} / ${f1(worst(x => x.probe.loopDelay.p999))} / ${f1(worst(x => x.probe.loopDelay.max))} | ` +
        `${(100 * sum(x => x.probe.utilization * x.probe.seconds) / wall).toFixed(0)}% | ${(sc.count / wall).toFixed(1)}, ${f2(sc.count === 0 ? NaN : sc.total / sc.count)} / ${f1(sc.max)} | ${mc.count}, ${f1(mc.max)} | ` +
        `${(100 * gcMs / 1000 / wall).toFixed(1)}% | ${f1(med(x => num(x.probe.served.p50)))} / ${f1(worst(x => num(x.probe.served.p99)))} / ${f1(worst(x => num(x.probe.served.p999)))} / ${f1(worst(x => num(x.probe.served.max)))} | ` +
        `${f2(med(x => x.own.p50))} / ${f2(worst(x => x.own.p99))} / ${f2(worst(x => x.own.p999))} / ${f1(worst(x => x.own.max))} | ${(1e6 * sum(x => x.probe.cpuSeconds) / sum(x => x.requests)).toFixed(0)} |`)
    }
    // Memory at idle after the load: 2 s without requests, then one more window each.
    await sleep(2000)
    const mib = (n: number) => (n / 2 ** 20).toFixed(1)
    lines.push('', 'Memory at idle, 2 s after the last run (MiB):', '',
      '| variant | RSS | V8 heap committed | heap used | new space used / committed | old space used | code space used | large objects | external (array buffers) | RSS outside the V8 heap |',
      '|---|---:|---:|---:|---|---:|---:|---:|---|---:|')
    for (const s of servers) {
      const { memory: m, heapSpaces: h } = await window(s)
      const used = (name: string) => h[name]?.used ?? 0
      lines.push(`| ${s.variant.name} | ${mib(m.rss)} | ${mib(m.heapTotal)} | ${mib(m.heapUsed)} | ${mib(used('new_space'))} / ${mib(h.new_space?.size ?? 0)} | ${mib(used('old_space'))} | ` +
        `${mib(used('code_space'))} | ${mib(used('large_object_space') + used('code_large_object_space'))} | ${mib(m.external)} (${mib(m.arrayBuffers)}) | ${mib(m.rss - m.heapTotal)} |`)
    }
    process.stdout.write(`${lines.join('\n')}\n`)
  } finally {
    for (const s of servers) {
      s.child.kill('SIGTERM')
      await new Promise(resolve => s.child.once('exit', resolve))
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
