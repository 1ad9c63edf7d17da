/**
 * Whether SQLite's durable commit stalls the reads in flight: better-sqlite3 runs the COMMIT, and
 * with `synchronous = FULL` its sync of the WAL, on the event loop, so every request waits for it.
 * A sequential reader (GET /posts/{id}) is timed alone, then beside writers that create posts, for
 * SQLITE_SYNCHRONOUS=FULL and NORMAL in turn, on one database each, the service pinned to core 0.
 *
 *   npx tsx bench/commit-stalls.ts        # STALL_SECONDS=5 STALL_ROUNDS=2 STALL_WRITERS=16 STALL_PIN=1
 *
 * Needs a build (`npm run build`): it runs bin/blog.js as production does.
 */
import { BIN, processEnv, startInstance, stop, token } from '../test/process-helper.ts'
import { freshDatabase } from '../test/helper.ts'

const SECONDS = Number(process.env.STALL_SECONDS ?? 5)
const ROUNDS = Number(process.env.STALL_ROUNDS ?? 2)
const WRITERS = Number(process.env.STALL_WRITERS ?? 16)
/** STALL_PIN=0 leaves the service unpinned (when other work holds core 0). */
const PIN = process.env.STALL_PIN !== '0'
const CONTENT = 'A paragraph of a post, about two kilobytes once repeated. '.repeat(35)

function quantile (sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
}

/** Reads one post after another until `until`; the latency of each, in ms. */
async function reader (base: string, ids: number[], until: number): Promise<number[]> {
  const times: number[] = []
  while (Date.now() < until) {
    const id = ids[Math.floor(Math.random() * ids.length)]!
    const t0 = performance.now()
    const res = await fetch(`${base}/posts/${id}`)
    await res.arrayBuffer()
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)
}

async function writer (base: string, authorization: string, until: number): Promise<number> {
  let n = 0
  while (Date.now() < until) {
    const res = await fetch(`${base}/posts`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title: `Load ${n}`, content: CONTENT, status: 'published' }) })
    await res.arrayBuffer()
    if (res.status === 201) n++
  }
  return n
}

async function measure (sync: 'FULL' | 'NORMAL'): Promise<string> {
  const db = await freshDatabase('sqlite')
  const env = processEnv(db, { SQLITE_SYNCHRONOUS: sync, RATE_LIMIT_MAX: '0', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0' })
  const instance = await startInstance(`stalls ${sync}`, env, `${PIN ? 'taskset -c 0 ' : ''}${process.execPath} ${BIN} serve`)
  try {
    const authorization = `Bearer ${await token('bench', ['posts:write'])}`
    const ids: number[] = []
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${instance.base}/posts`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title: `Seed ${i}`, content: CONTENT, status: 'published' }) })
      ids.push(((await res.json()) as { id: number }).id)
    }
    const idle = await reader(instance.base, ids, Date.now() + SECONDS * 1000)
    const until = Date.now() + SECONDS * 1000
    const [loaded, ...written] = await Promise.all([reader(instance.base, ids, until), ...Array.from({ length: WRITERS }, async () => await writer(instance.base, authorization, until))])
    const creates = written.reduce((a, b) => a + b, 0) / SECONDS
    const f = (x: number) => x.toFixed(1)
    return `| ${sync} | ${f(quantile(idle, 0.5))} | ${f(quantile(idle, 0.99))} | ${f(quantile(loaded!, 0.5))} | ${f(quantile(loaded!, 0.99))} | ${f(quantile(loaded!, 0.999))} | ${Math.round(creates)} |`
  } finally {
    await stop(instance)
    await db.drop()
  }
}

const rows: string[] = []
for (let round = 0; round < ROUNDS; round++) {
  for (const sync of ['FULL', 'NORMAL'] as const) rows.push(await measure(sync))
}
process.stdout.write(`${SECONDS} s each, ${WRITERS} writers, ${ROUNDS} rounds alternating; read latency in ms\n\n`)
process.stdout.write('| SQLITE_SYNCHRONOUS | idle p50 | idle p99 | under writes p50 | p99 | p99.9 | creates/s |\n|---|---:|---:|---:|---:|---:|---:|\n')
process.stdout.write(`${rows.join('\n')}\n`)
