import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { freePort, freshDatabase, postgresAvailable, storeKinds } from '../../../helper.ts'
import { type Instance, processEnv, startInstance, stop, token } from '../../../process-helper.ts'
import { until, untilValue } from '../../../support/poll.ts'

const POSTS = 50

async function postJson (base: string, authorization: string, body: object): Promise<{ status: number, body: { id: number, status: string, publish_at: string | null } }> {
  const res = await fetch(`${base}/posts`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() as never }
}

/** The scheduled switches an instance made, by its own metric (served on its METRICS_PORT). */
async function switchesOf (metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  return Number(/^scheduled_posts_published_total (\d+)/m.exec(text)?.[1] ?? 'NaN')
}

const reachable = await postgresAvailable()

describe('three instances on one PostgreSQL, 50 posts scheduled for the same second', { skip: !reachable && 'PostgreSQL is unreachable (set CI=true to make this a failure)' }, () => {
  let db: Awaited<ReturnType<typeof freshDatabase>> | undefined
  let instances: Instance[] = []
  after(async () => {
    for (const i of instances) await stop(i)
    await db?.drop()
  })

  it('publishes each once: one revision by system per post, the switches shared among the instances add up to 50', async (t) => {
    db = await freshDatabase('postgres')
    const env = processEnv(db, { PG_POOL_MAX: '4', RATE_LIMIT_MAX: '0', LOG_LEVEL: 'warn' })
    const metricsPorts = [await freePort(), await freePort(), await freePort()]
    instances = await Promise.all(['A', 'B', 'C'].map(async (name, i) => await startInstance(name, { ...env, METRICS_PORT: String(metricsPorts[i]) })))
    const authorization = `Bearer ${await token('alice', ['posts:write'])}`
    // A whole second far enough ahead that every create is made before it, on a slow machine too.
    const second = new Date(Math.ceil((Date.now() + 8000) / 1000) * 1000).toISOString()
    const created = await Promise.all(Array.from({ length: POSTS }, async (_, n) =>
      await postJson(instances[n % 3]!.base, authorization, { title: `same second ${n}`, content: '', status: 'scheduled', publish_at: second })))
    assert.deepEqual(created.map(c => c.status), Array(POSTS).fill(201))
    assert.ok(Date.now() < Date.parse(second), 'every post was scheduled before its time')

    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    try {
      await until(async () => (await c.query("SELECT count(*)::int AS n FROM posts WHERE status = 'scheduled'")).rows[0].n === 0, 'every post to be switched', 60_000, 100)
      const posts = await c.query('SELECT id, status, publish_at, revision, updated_at FROM posts ORDER BY id')
      assert.equal(posts.rows.length, POSTS)
      for (const p of posts.rows) {
        assert.equal(p.status, 'published')
        assert.equal(p.publish_at, null)
        assert.equal(p.revision, 2, `post ${p.id} was changed once after its creation`)
        const lag = (p.updated_at as Date).getTime() - Date.parse(second)
        assert.ok(lag >= 0 && lag < 5000, `post ${p.id} switched ${lag} ms after its publish_at`)
      }
      const switches = await c.query("SELECT post_id, count(*)::int AS n FROM post_revisions WHERE editor = 'system' GROUP BY post_id")
      assert.equal(switches.rows.length, POSTS, 'every post has a revision by the switch')
      assert.ok(switches.rows.every(r => r.n === 1), 'and only one')
      const events = await c.query("SELECT data FROM events WHERE type = 'post.published'")
      const ids = events.rows.map(r => (JSON.parse(r.data as string) as { id: number }).id)
      assert.equal(ids.length, POSTS, 'one post.published event per switch')
      assert.equal(new Set(ids).size, POSTS, 'one per post')
    } finally {
      await c.end()
    }
    const perInstance = await Promise.all(metricsPorts.map(switchesOf))
    assert.equal(perInstance.reduce((a, b) => a + b, 0), POSTS, `switches per instance: ${perInstance.join(', ')}`)
    t.diagnostic(`switches made by A, B, C: ${perInstance.join(', ')}`)
  })
})

for (const kind of await storeKinds()) {
  describe(`an instance down at publish_at [${kind}]`, () => {
    let db: Awaited<ReturnType<typeof freshDatabase>> | undefined
    let instance: Instance | undefined
    after(async () => {
      if (instance) await stop(instance)
      await db?.drop()
    })

    it('publishes at the next start what fell due while no instance ran, within 5 s of being ready', async () => {
      db = await freshDatabase(kind)
      const env = processEnv(db, { RATE_LIMIT_MAX: '0' })
      instance = await startInstance('before', env)
      const authorization = `Bearer ${await token('alice', ['posts:write'])}`
      const publishAt = new Date(Date.now() + 3000).toISOString()
      const created = await postJson(instance.base, authorization, { title: 'while down', content: '', status: 'scheduled', publish_at: publishAt })
      assert.equal(created.status, 201)
      assert.equal(await stop(instance), 0)
      instance = undefined
      // Real time on purpose: the instances are processes on the machine's clock, and the post
      // must fall due while none runs.
      await sleep(Math.max(0, Date.parse(publishAt) + 500 - Date.now()))

      instance = await startInstance('after', env)
      const ready = Date.now()
      const base = instance.base
      const post = await untilValue(async () => await (await fetch(`${base}/posts/${created.body.id}`, { headers: { authorization } })).json() as typeof created.body,
        p => p.status === 'published', 10_000)
      const switched = Date.parse((post as unknown as { updated_at: string }).updated_at)
      assert.ok(switched > Date.parse(publishAt), 'published after its time, by the instance started later')
      assert.ok(switched - ready < 5000, `published ${switched - ready} ms after the instance was ready`)
      const revisions = await (await fetch(`${instance.base}/posts/${created.body.id}/revisions`, { headers: { authorization } })).json() as { editor: string }[]
      assert.deepEqual(revisions.map(r => r.editor), ['system', 'alice'])
    })
  })
}
