import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import pg from 'pg'
import { freshDatabase, postgresAvailable, REDIS_URL, redisAvailable } from './helper.ts'
import { BIN, type Instance, processEnv, ROOT, startInstance, stop, token } from './process-helper.ts'

const RATE_LIMIT_MAX = 30
const run = promisify(execFile)

const reachable = (await postgresAvailable()) && (await redisAvailable())

describe('several instances on one PostgreSQL and Redis', { skip: !reachable && 'PostgreSQL or Redis is unreachable (set CI=true to make this a failure)' }, () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>
  let env: Record<string, string>
  let a: Instance
  let b: Instance
  let alice: Record<string, string>

  before(async () => {
    db = await freshDatabase('postgres')
    env = processEnv({ url: db.url }, {
      REDIS_URL,
      REDIS_KEY_PREFIX: `blog-test-${randomBytes(6).toString('hex')}:`,
      MIGRATE_ON_START: 'false',
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      RATE_LIMIT_WINDOW_S: '60',
      PG_POOL_MAX: '4',
      LOG_LEVEL: 'warn',
    })
    alice = { authorization: `Bearer ${await token('alice', ['posts:write'])}`, 'content-type': 'application/json' }
  })
  after(async () => {
    for (const i of [a, b]) if (i) await stop(i)
    await db.drop()
  })

  it('`blog migrate` creates the schema of a fresh database and exits 0', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'migrate'], { cwd: ROOT, env: { ...process.env, ...env } })
    assert.match(stdout, /migrations applied \(postgres\)/)
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    try {
      const r = await c.query("select table_name from information_schema.tables where table_schema = 'public' order by table_name")
      const tables = r.rows.map(row => row.table_name as string)
      for (const t of ['api_keys', 'kysely_migration', 'meta', 'posts']) assert.ok(tables.includes(t), `${t} in ${tables.join(', ')}`)
    } finally {
      await c.end()
    }
    // Without MIGRATE_ON_START the instances below rely on exactly this.
    ;[a, b] = await Promise.all([startInstance('A', env), startInstance('B', env)])
  })

  it('reads on B what was written on A, with the same body and ETag', async () => {
    const created = await fetch(`${a.base}/posts`, { method: 'POST', headers: alice, body: JSON.stringify({ title: 'Shared', content: 'on A' }) })
    assert.equal(created.status, 201)
    const location = created.headers.get('location')!
    const onA = await fetch(`${a.base}${location}`)
    const onB = await fetch(`${b.base}${location}`)
    assert.equal(onB.status, 200)
    assert.equal(onB.headers.get('etag'), onA.headers.get('etag'))
    assert.deepEqual(await onB.json(), await onA.json())
  })

  it('serves each instance\'s own metrics on its metrics port, not on the API port', async () => {
    const scrape = async (i: Instance) => {
      const res = await fetch(`${i.metrics}/metrics`)
      assert.equal(res.status, 200, i.name)
      return Number(/^http_requests_total\{method="GET",route="\/healthz",status="200"\} (\d+)$/m.exec(await res.text())?.[1] ?? 0)
    }
    const [beforeA, beforeB] = [await scrape(a), await scrape(b)]
    for (let n = 0; n < 3; n++) assert.equal((await fetch(`${a.base}/healthz`)).status, 200)
    assert.equal(await scrape(a), beforeA + 3, 'A counts what A answered')
    assert.equal(await scrape(b), beforeB, 'B does not count what A answered')
    for (const i of [a, b]) assert.equal((await fetch(`${i.base}/metrics`)).status, 404, i.name)
  })

  it('serves version 2 alike on both, by path and by media type', async () => {
    const created = await (await fetch(`${a.base}/v2/posts`, { method: 'POST', headers: alice, body: JSON.stringify({ title: 'Versioned', content: '' }) })).json() as { postId: number }
    for (const [url, headers] of [[`/v2/posts/${created.postId}`, {}], [`/posts/${created.postId}`, { accept: 'application/vnd.blog.v2+json' }]] as const) {
      const onA = await fetch(`${a.base}${url}`, { headers })
      const onB = await fetch(`${b.base}${url}`, { headers })
      assert.equal(onB.headers.get('api-version'), '2', url)
      assert.equal(onB.headers.get('etag'), onA.headers.get('etag'), url)
      assert.deepEqual(await onB.json(), await onA.json(), url)
    }
  })

  it('accepts on B a conditional PUT made with the ETag from A, and A then sees the change', async () => {
    const post = await (await fetch(`${a.base}/posts`, { method: 'POST', headers: alice, body: JSON.stringify({ title: 'v1', content: '' }) })).json() as { id: number }
    const etag = (await fetch(`${a.base}/posts/${post.id}`)).headers.get('etag')!
    const put = await fetch(`${b.base}/posts/${post.id}`, { method: 'PUT', headers: { ...alice, 'if-match': etag }, body: JSON.stringify({ title: 'v2', content: '' }) })
    assert.equal(put.status, 200)
    // An anonymous read on A may be answered from A's public cache until A reads B's event (EVENTS_POLL_MS, within 1 s).
    const until = Date.now() + 1000
    let seen = await fetch(`${a.base}/posts/${post.id}`)
    while (seen.headers.get('etag') !== put.headers.get('etag') && Date.now() < until) {
      await sleep(25)
      seen = await fetch(`${a.base}/posts/${post.id}`)
    }
    assert.equal(((await seen.json()) as { title: string }).title, 'v2')
    assert.equal(seen.headers.get('etag'), put.headers.get('etag'))
    const stale = await fetch(`${a.base}/posts/${post.id}`, { method: 'PUT', headers: { ...alice, 'if-match': etag }, body: JSON.stringify({ title: 'v3', content: '' }) })
    assert.equal(stale.status, 412, 'the old ETag no longer matches on A either')
  })

  it('follows on B a cursor from A', async () => {
    const bob = { authorization: `Bearer ${await token('bob', ['posts:write'])}`, 'content-type': 'application/json' }
    for (let i = 0; i < 5; i++) {
      assert.equal((await fetch(`${a.base}/posts`, { method: 'POST', headers: bob, body: JSON.stringify({ title: `page ${i}`, content: '', status: 'draft' }) })).status, 201)
    }
    const everything = await (await fetch(`${a.base}/posts?status=draft&limit=100`, { headers: bob })).json() as { id: number }[]
    assert.equal(everything.length, 5)
    const first = await fetch(`${a.base}/posts?status=draft&limit=2`, { headers: bob })
    const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')
    assert.ok(next, `Link: ${first.headers.get('link')}`)
    const second = await fetch(new URL(next[1]!, b.base), { headers: bob })
    assert.equal(second.status, 200)
    const ids = [...await first.json() as { id: number }[], ...await second.json() as { id: number }[]].map(p => p.id)
    assert.deepEqual(ids, everything.slice(0, 4).map(p => p.id))
  })

  it('replays on B a POST first made on A with the same Idempotency-Key', async () => {
    const headers = { ...alice, 'idempotency-key': 'across-instances-1' }
    const body = JSON.stringify({ title: 'Once', content: 'across instances' })
    const first = await fetch(`${a.base}/posts`, { method: 'POST', headers, body })
    const again = await fetch(`${b.base}/posts`, { method: 'POST', headers, body })
    assert.equal(first.status, 201)
    assert.equal(again.status, 201)
    assert.equal(again.headers.get('idempotent-replayed'), 'true')
    assert.equal(again.headers.get('location'), first.headers.get('location'))
    assert.equal(again.headers.get('etag'), first.headers.get('etag'))
    assert.equal(await again.text(), await first.text())
  })

  it('creates one post from 20 concurrent requests with one key spread over A and B', async () => {
    const headers = { authorization: `Bearer ${await token('racer', ['posts:write'])}`, 'content-type': 'application/json', 'idempotency-key': 'race-across-instances' }
    const body = JSON.stringify({ title: 'Raced once', content: '', status: 'draft' })
    const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const res = await fetch(`${(i % 2 === 0 ? a : b).base}/posts`, { method: 'POST', headers, body })
      return { status: res.status, replayed: res.headers.get('idempotent-replayed'), retryAfter: res.headers.get('retry-after'), text: await res.text() }
    }))
    const created = answers.filter(r => r.status === 201 && r.replayed === null)
    assert.equal(created.length, 1, JSON.stringify(answers.map(r => r.status)))
    for (const r of answers) {
      if (r.status === 201) assert.equal(r.text, created[0]!.text)
      else assert.ok(r.status === 409 && r.retryAfter !== null, `${r.status} ${r.text}`)
    }
    const drafts = await (await fetch(`${a.base}/posts?status=draft&limit=100`, { headers })).json() as { title: string }[]
    assert.equal(drafts.filter(p => p.title === 'Raced once').length, 1)
  })

  it('serves orders alike on both: placed on A, read and cancelled on B, the race lost on A', async () => {
    const carol = { authorization: `Bearer ${await token('carol', ['orders:write'])}`, 'content-type': 'application/json' }
    const placed = await fetch(`${a.base}/orders`, { method: 'POST', headers: carol, body: JSON.stringify({ customer_email: 'carol@example.com', items: [{ sku: 'A-1', quantity: 1 }] }) })
    assert.equal(placed.status, 201)
    const location = placed.headers.get('location')!
    const onB = await fetch(`${b.base}${location}`, { headers: carol })
    assert.equal(onB.headers.get('etag'), placed.headers.get('etag'))
    assert.equal((await fetch(`${b.base}${location}/cancel`, { method: 'POST', headers: carol })).status, 200)
    const late = await fetch(`${a.base}${location}/cancel`, { method: 'POST', headers: carol })
    assert.equal(late.status, 409)
    assert.equal(((await late.json()) as { code: string }).code, 'ORDER_NOT_CANCELLABLE')
  })

  it('accepts on both an API key made once with the command line', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'keys', 'create', '--name', 'ops', '--scopes', 'posts:write'], { cwd: ROOT, env: { ...process.env, ...env } })
    const key = stdout.trim()
    assert.match(key, /^blog_/)
    for (const i of [a, b]) {
      const res = await fetch(`${i.base}/posts`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: `by key on ${i.name}`, content: '' }) })
      assert.equal(res.status, 201, i.name)
      assert.equal(((await res.json()) as { author: string }).author, 'ops')
    }
  })

  it('shares one rate limit: requests spread over A and B meet 429 at the combined count', async () => {
    const headers = { authorization: `Bearer ${await token('counted', [])}` }
    const statuses: number[] = []
    for (let i = 0; i <= RATE_LIMIT_MAX; i++) {
      const res = await fetch(`${(i % 2 === 0 ? a : b).base}/posts?limit=1`, { headers })
      await res.arrayBuffer()
      statuses.push(res.status)
    }
    assert.deepEqual(statuses, [...Array(RATE_LIMIT_MAX).fill(200), 429])
  })

  it('loses nothing when A is stopped with SIGTERM while B serves', async (t) => {
    const writers = Array.from({ length: 4 }, (_, w) => ({ authorization: '', w }))
    for (const writer of writers) writer.authorization = `Bearer ${await token(`writer-${writer.w}`, ['posts:write'])}`
    const acknowledged: number[] = []
    let refused = 0
    let finishedByA = 0
    let stopping = false
    const write = async (target: Instance, auth: string, title: string) => {
      let res: Response
      let body: string
      try {
        res = await fetch(`${target.base}/posts`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ title, content: 'x'.repeat(2000) }) })
        body = await res.text()
      } catch (err) {
        // A connection refused or closed by A once it stopped listening: never acknowledged.
        if (target === a && stopping) {
          refused++
          return
        }
        throw err
      }
      if (res.status === 201) {
        acknowledged.push((JSON.parse(body) as { id: number }).id)
        if (target === a && stopping) finishedByA++
        return
      }
      // While closing, Fastify answers requests on kept-alive connections with 503.
      if (target === a && stopping && res.status === 503) {
        refused++
        return
      }
      assert.fail(`${target.name} answered ${res.status}: ${body}`)
    }
    const load = writers.map(async writer => {
      for (let i = 0; i < 6; i++) {
        await Promise.all([write(a, writer.authorization, `A ${writer.w}.${i}`), write(b, writer.authorization, `B ${writer.w}.${i}`)])
      }
    })
    // Real time on purpose: the SIGTERM lands among the writes in flight.
    await sleep(30)
    stopping = true
    a.child.kill('SIGTERM')
    await Promise.all(load)
    assert.equal(await a.exited, 0, `A's exit code; its output:\n${a.output.join('')}`)
    await assert.rejects(fetch(`${a.metrics}/metrics`), 'A\'s metrics listener closed with it')
    assert.equal((await fetch(`${b.metrics}/metrics`)).status, 200, 'B\'s metrics still answer')
    assert.ok(acknowledged.length >= 24, `B acknowledged all its writes (${acknowledged.length} in all, ${refused} refused by A)`)
    t.diagnostic(`${acknowledged.length} writes acknowledged, ${finishedByA} of them by A after SIGTERM, ${refused} refused by A`)
    // One list read (anonymous reads share one budget per address, and this suite spends it).
    const reader = { authorization: `Bearer ${await token('auditor', ['admin'])}` }
    const res = await fetch(`${b.base}/posts?sort=-id&limit=100`, { headers: reader })
    assert.equal(res.status, 200)
    const onB = new Set((await res.json() as { id: number }[]).map(p => p.id))
    assert.deepEqual(acknowledged.filter(id => !onB.has(id)), [], 'every acknowledged write is readable on B')
  })
})
