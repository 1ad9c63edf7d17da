/**
 * People's costs (part of `npm run bench`, or alone: `npm run bench:people`), the service as users
 * start it (package.json's `start`), pinned to core 0, wrk on core 1:
 *   - a signed-in read: `GET /posts/{id}` with a person's access token (an ES256 JWT the service
 *     signed) against the same read with an API key, interleaved over BENCH_ROUNDS rounds of
 *     BENCH_SECONDS each. Target: ≥ 0.95× (a verified token is cached for its lifetime);
 *   - sign-ins: 20 password sign-ins a second (argon2id, off the event loop) for BENCH_SECONDS,
 *     with the event loop's delay p99 over them (prom-client's `nodejs_eventloop_lag_p99_seconds`,
 *     read from /metrics before and after) and the p99 of a read sent every 50 ms meanwhile.
 *     Target: p99 delay ≤ 20 ms.
 *
 *   npm run bench:people                        # 10 s per run, 2 rounds
 *   BENCH_SECONDS=3 BENCH_ROUNDS=1 npm run bench:people
 *
 * Needs wrk (Debian: `apt-get install -y wrk`), a build (`npm run build`), and to pin, taskset.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { ROOT } from './seed.ts'
import { SCRIPT, wrkSummary } from './wrk.ts'
import { freePort } from './net.ts'
import { pin } from './cores.ts'
import { quantile } from './photo.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
const POSTS = 200
const PASSWORD = 'a long bench pass phrase'
const SIGN_INS_PER_SECOND = 20

function say (s: string): void {
  process.stdout.write(`${s}\n`)
}

async function start (dir: string): Promise<{ child: ChildProcess, port: number, base: string, metrics: string, out: string, err: string }> {
  const port = await freePort()
  const metricsPort = await freePort()
  const out = path.join(dir, 'stdout.log')
  const err = path.join(dir, 'stderr.log')
  const startScript = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  const [cmd, args] = pin(0, 'sh', ['-c', `exec ${startScript}`])
  const outFd = fs.openSync(out, 'w')
  const errFd = fs.openSync(err, 'w')
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), METRICS_PORT: String(metricsPort), DATABASE_URL: `sqlite:${path.join(dir, 'blog.db')}`, DATA_DIR: dir, RATE_LIMIT_MAX: '1000000000', LOG_LEVEL: 'warn' },
    stdio: ['ignore', outFd, errFd],
  })
  fs.closeSync(outFd)
  fs.closeSync(errFd)
  const base = `http://127.0.0.1:${port}`
  for (const began = Date.now(); Date.now() - began < 60_000; await sleep(20)) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return { child, port, base, metrics: `http://127.0.0.1:${metricsPort}`, out, err }
    } catch {}
    if (child.exitCode !== null) break
  }
  child.kill()
  throw new Error(`the service did not start: ${fs.readFileSync(err, 'utf8')}`)
}

async function json (res: Response): Promise<any> {
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`)
  return await res.json()
}

function wrkRead (port: number, authorization: string): { rps: number, p99: number, errors: number } {
  const [cmd, args] = pin(1, 'wrk', ['-t1', '-c64', `-d${SECONDS}s`, '--timeout', '10s', '-s', SCRIPT, `http://127.0.0.1:${port}`, '--', 'readas', String(POSTS), authorization])
  const s = wrkSummary(execFileSync(cmd, args, { encoding: 'utf8' }))
  return { rps: s.requests / s.seconds, p99: s.p99, errors: s.errors }
}

async function loopLagP99 (base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const line = text.split('\n').find(l => l.startsWith('nodejs_eventloop_lag_p99_seconds '))
  if (line === undefined) throw new Error('/metrics has no nodejs_eventloop_lag_p99_seconds')
  return Number(line.split(' ')[1]) * 1000
}

async function main (): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/server.js')) && !fs.existsSync(path.join(ROOT, 'dist/blog.js'))) throw new Error('dist/ is missing: run npm run build first')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-bench-people-'))
  const s = await start(dir)
  try {
    await sleep(200)
    const setupToken = /\/admin\/setup#([A-Za-z0-9_-]+)/.exec(fs.readFileSync(s.out, 'utf8'))?.[1]
    const adminKey = /Authorization: Bearer (\S+)/.exec(fs.readFileSync(s.err, 'utf8'))?.[1]
    if (setupToken === undefined || adminKey === undefined) throw new Error('the service printed no set-up link or admin key')
    const post = (body: unknown, headers: Record<string, string> = {}) => ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    const owner = await json(await fetch(`${s.base}/setup`, post({ token: setupToken, name: 'Bench Owner', email: 'owner@bench.example', password: PASSWORD })))
    for (let i = 1; i <= POSTS; i++) await json(await fetch(`${s.base}/posts`, post({ title: `Post ${i}`, content: 'Lorem ipsum '.repeat(150) }, { authorization: `Bearer ${adminKey}` })))

    say('## People: a signed-in read\n')
    say(`${SECONDS} s per run, ${ROUNDS} rounds, 64 connections, GET /posts/{id} of ${POSTS} posts, ${os.cpus().length} cores.\n`)
    say('| credential | req/s by round | req/s (mean) | p99 ms (median) | errors |')
    say('|---|---|---:|---:|---:|')
    const credentials: [string, string][] = [['API key', `Bearer ${adminKey}`], ['person\'s access token', `Bearer ${owner.access_token as string}`]]
    const results = new Map<string, { rps: number, p99: number, errors: number }[]>(credentials.map(([name]) => [name, []]))
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, authorization] of credentials) {
        wrkRead(s.port, authorization) // warm-up
        results.get(name)!.push(wrkRead(s.port, authorization))
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
    for (const [name] of credentials) {
      const r = results.get(name)!
      say(`| ${name} | ${r.map(x => x.rps.toFixed(0)).join(', ')} | ${mean(r.map(x => x.rps)).toFixed(0)} | ${quantile(r.map(x => x.p99), 0.5).toFixed(1)} | ${r.reduce((a, x) => a + x.errors, 0)} |`)
    }
    const ratio = mean(results.get(credentials[1]![0])!.map(x => x.rps)) / mean(results.get(credentials[0]![0])!.map(x => x.rps))
    say(`\nSigned-in read ÷ API-key read: ${ratio.toFixed(3)} (target ≥ 0.95: ${ratio >= 0.95 ? 'met' : 'NOT met'})\n`)

    say('## People: sign-ins and the event loop\n')
    await loopLagP99(s.metrics) // starts a fresh window (prom-client resets the histogram at each collect)
    const signIns: number[] = []
    const reads: number[] = []
    let failed = 0
    const pending: Promise<void>[] = []
    const began = performance.now()
    for (let i = 0; performance.now() - began < SECONDS * 1000; i++) {
      const at = began + i * (1000 / SIGN_INS_PER_SECOND)
      await sleep(Math.max(0, at - performance.now()))
      pending.push((async () => {
        const t0 = performance.now()
        const res = await fetch(`${s.base}/sessions`, post({ email: 'owner@bench.example', password: PASSWORD }))
        if (res.status !== 201) failed++
        await res.arrayBuffer()
        signIns.push(performance.now() - t0)
      })())
      pending.push((async () => {
        const t0 = performance.now()
        const res = await fetch(`${s.base}/posts/${1 + (i % POSTS)}`)
        await res.arrayBuffer()
        reads.push(performance.now() - t0)
      })())
    }
    await Promise.all(pending)
    const elapsed = (performance.now() - began) / 1000
    const lag = await loopLagP99(s.metrics)
    say(`| sign-ins/s (offered ${SIGN_INS_PER_SECOND}) | sign-in p50 ms | sign-in p99 ms | a read's p99 ms meanwhile | event loop delay p99 ms | failed |`)
    say('|---:|---:|---:|---:|---:|---:|')
    say(`| ${(signIns.length / elapsed).toFixed(1)} | ${quantile(signIns, 0.5).toFixed(1)} | ${quantile(signIns, 0.99).toFixed(1)} | ${quantile(reads, 0.99).toFixed(1)} | ${lag.toFixed(1)} | ${failed} |`)
    say(`\nEvent loop delay p99 during ${SIGN_INS_PER_SECOND} sign-ins a second: ${lag.toFixed(1)} ms (target ≤ 20 ms: ${lag <= 20 ? 'met' : 'NOT met'})`)
  } finally {
    s.child.kill('SIGTERM')
    await new Promise(resolve => s.child.once('exit', resolve))
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
