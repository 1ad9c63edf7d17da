import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import type { Viewer } from '../../src/domain/principal.ts'
import { loadConfig, openStore } from '../../src/context.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { freshDatabase, storeKinds } from '../helper.ts'
import { processEnv, startInstance, token } from '../process-helper.ts'
import { recordResult } from '../reliability-record.ts'
import { until } from '../support/poll.ts'

/**
 * Crash durability: bursts of concurrent writes to a real server process, SIGKILL at a random
 * moment, restart; every acknowledged create must be there, every acknowledged delete gone.
 * `CRASH_ROUNDS` kill points per store (`npm run crash` runs the long form).
 */
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 1)
const WORKERS = Number(process.env.CRASH_WORKERS ?? 12)

async function kill (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/** What the server acknowledged, and the deletes it was sent but did not acknowledge (they may have happened). */
interface Ledger { created: Map<number, string>, deleted: Set<number>, deleting: Set<number> }

/** One worker: create, sometimes delete what it created, until told to stop; records only what was acknowledged. */
async function writer (origin: string, authorization: string, worker: number, ledger: Ledger, stop: AbortSignal): Promise<void> {
  const mine: number[] = []
  for (let i = 0; !stop.aborted; i++) {
    try {
      if (mine.length > 0 && i % 3 === 2) {
        const id = mine.splice(Math.floor(Math.random() * mine.length), 1)[0]!
        ledger.deleting.add(id)
        const res = await fetch(`${origin}/posts/${id}`, { method: 'DELETE', headers: { authorization } })
        if (res.status === 204) ledger.deleted.add(id)
        ledger.deleting.delete(id)
        await res.arrayBuffer()
      } else {
        const title = `w${worker}-${i}-${Math.random().toString(36).slice(2, 8)}`
        const res = await fetch(`${origin}/posts`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title, content: 'x'.repeat(200) }) })
        if (res.status === 201) {
          const id = ((await res.json()) as { id: number }).id
          ledger.created.set(id, title)
          mine.push(id)
        } else {
          await res.arrayBuffer()
        }
      }
    } catch {
      // The server was killed: this write was never acknowledged, so it may or may not be there.
      return
    }
  }
}

/**
 * Search once an instance restarted after the kills has caught up (SQLite indexes after the commit,
 * so a kill may leave posts queued): every post there is found by its title, no deleted one is,
 * and the full-text index holds one entry per post, none for a deleted one. Returns how many posts
 * were searched for.
 */
async function searchConsistent (env: Record<string, string>, ledger: Ledger, admin: Viewer): Promise<number> {
  const { child } = await startInstance('crash search', env)
  try {
    const store = await openStore(loadConfig(env))
    try {
      await until(async () => await store.posts.searchBacklog() === 0, 'the indexer to catch up after the restart', 30_000)
      const byId = [{ key: 'id' as const, direction: 'asc' as const }]
      let left = 0
      for (const [id, title] of ledger.created) {
        const exists = (await store.posts.findById(id, admin)) !== null
        const found = (await store.posts.list({ filter: { q: title }, sort: byId, limit: 10 }, admin)).items.map(p => p.id)
        assert.deepEqual(found, exists ? [id] : [], `post ${id} (${exists ? 'there' : 'deleted'}) searched by its title`)
        if (exists) left++
      }
      if (store.kind === 'sqlite') {
        // The index is contentless: a match there that is no post would be a deleted post's entry.
        const db = (store as KyselyStore).db
        const entries = await sql<{ n: number }>`SELECT count(*) AS n FROM posts_fts WHERE posts_fts MATCH ${'x'.repeat(200)}`.execute(db)
        const posts = await sql<{ n: number }>`SELECT count(*) AS n FROM posts`.execute(db)
        assert.equal(entries.rows[0]!.n, posts.rows[0]!.n, 'one index entry per post, none for a deleted one')
      }
      return left
    } finally {
      await store.close()
    }
  } finally {
    await kill(child)
  }
}

for (const kind of await storeKinds()) {
  describe(`crash durability: SIGKILL during bursts of writes [${kind}]`, () => {
    let drop: (() => Promise<void>) | undefined
    after(async () => { await drop?.() })

    it(`loses no acknowledged write and resurrects no acknowledged delete over ${ROUNDS} kill points`, async () => {
      const db = await freshDatabase(kind)
      drop = db.drop
      const env = processEnv(db, { RATE_LIMIT_MAX: '0' })
      const authorization = `Bearer ${await token('writer', ['posts:write'])}`
      const ledger: Ledger = { created: new Map(), deleted: new Set(), deleting: new Set() }
      const admin: Viewer = { subject: 'checker', scopes: new Set(['admin']), kind: 'jwt' }
      let killedWithWritesInFlight = 0
      for (let round = 0; round < ROUNDS; round++) {
        const { child, base: origin } = await startInstance(`crash ${round}`, env)
        try {
          const stop = new AbortController()
          const before = ledger.created.size
          const workers = Array.from({ length: WORKERS }, async (_, w) => { await writer(origin, authorization, w, ledger, stop.signal) })
          // A random point in the burst, once writes are flowing: a cold process (a slow machine)
          // may take a while to answer its first write, so wait for one before choosing the point.
          await until(() => ledger.created.size > before, 'the burst\'s first write', 20_000)
          // Real time on purpose: the kill lands at a random point of the child's burst.
          await sleep(Math.random() * 300)
          await kill(child)
          stop.abort()
          await Promise.all(workers)
          if (ledger.created.size > before) killedWithWritesInFlight++
        } finally {
          await kill(child)
        }
        // Checked on the store itself, as the next start will find it.
        const store = await openStore(loadConfig(env))
        try {
          for (const [id, title] of ledger.created) {
            const post = await store.posts.findById(id, admin)
            if (ledger.deleted.has(id)) assert.equal(post, null, `round ${round}: post ${id} was deleted (204) but is back`)
            // A delete cut short by the kill may or may not have committed; either is correct.
            else if (post === null && ledger.deleting.has(id)) continue
            else {
              ledger.deleting.delete(id)
              assert.equal(post?.title, title, `round ${round}: post ${id} was created (201) but is ${post === null ? 'missing' : `"${post.title}"`}`)
            }
          }
        } finally {
          await store.close()
        }
      }
      assert.ok(killedWithWritesInFlight >= Math.ceil(ROUNDS / 2), `writes were flowing at ${killedWithWritesInFlight} of ${ROUNDS} kill points`)
      const searched = await searchConsistent(env, ledger, admin)
      recordResult(`crash-${kind}`, {
        test: `SIGKILL during concurrent writes, restart [${kind}]`,
        injected: `SIGKILL at a random point of a burst from ${WORKERS} concurrent writers (creates and deletes)`,
        count: ROUNDS,
        result: `${ledger.created.size} acknowledged creates and ${ledger.deleted.size} acknowledged deletes: 0 lost, 0 resurrected (${ledger.deleting.size} deletes cut short by the kill: either outcome is correct); after a restart, search found each of the ${searched} posts left by its title and none deleted`,
      })
    })
  })
}

const SCHEDULED = 20

for (const kind of await storeKinds()) {
  describe(`crash durability: SIGKILL while scheduled switches are due [${kind}]`, () => {
    let drop: (() => Promise<void>) | undefined
    after(async () => { await drop?.() })

    it(`loses no switch and doubles none over ${ROUNDS} kill points`, async () => {
      const db = await freshDatabase(kind)
      drop = db.drop
      const env = processEnv(db, { RATE_LIMIT_MAX: '0' })
      const authorization = `Bearer ${await token('writer', ['posts:write'])}`
      const admin: Viewer = { subject: 'checker', scopes: new Set(['admin']), kind: 'jwt' }
      const all = { filter: {}, sort: [{ key: 'number' as const, direction: 'desc' as const }], limit: 100 }
      const ids: number[] = []
      let switchedBeforeKill = 0
      for (let round = 0; round < ROUNDS; round++) {
        let { child, base } = await startInstance(`switch crash ${round}`, env)
        try {
          // Due one after another over 1.5 s, from 3 s on: the kill falls among them.
          const first = Date.now() + 3000
          for (let n = 0; n < SCHEDULED; n++) {
            const publishAt = new Date(first + Math.floor(n * 1500 / SCHEDULED)).toISOString()
            const res = await fetch(`${base}/posts`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title: `r${round}-${n}`, content: '', status: 'scheduled', publish_at: publishAt }) })
            assert.equal(res.status, 201)
            ids.push(((await res.json()) as { id: number }).id)
          }
          // Real time on purpose: the child's scheduler runs on the machine's clock, and the kill
          // falls at a random point among its due times.
          await sleep(Math.max(0, first - Date.now()) + Math.random() * 1500)
          await kill(child)
          const store = await openStore(loadConfig(env))
          try {
            for (const id of ids.slice(-SCHEDULED)) if ((await store.posts.findById(id, admin))?.status === 'published') switchedBeforeKill++
          } finally {
            await store.close()
          }
          ;({ child, base } = await startInstance(`switch restart ${round}`, env))
          await until(async () => (await (await fetch(`${base}/posts?status=scheduled&limit=1`, { headers: { authorization } })).json() as unknown[]).length === 0,
            'the restarted instance to publish what fell due', 30_000)
        } finally {
          await kill(child)
        }
      }
      const store = await openStore(loadConfig(env))
      try {
        for (const id of ids) {
          const post = await store.posts.findById(id, admin)
          assert.equal(post?.status, 'published', `post ${id} was not published`)
          const revisions = (await store.revisions.list(id, all)).items
          assert.deepEqual(revisions.map(r => [r.number, r.status, r.editor]), [[2, 'published', 'system'], [1, 'scheduled', 'writer']], `post ${id}: one switch, one revision`)
        }
      } finally {
        await store.close()
      }
      recordResult(`crash-schedule-${kind}`, {
        test: `SIGKILL while scheduled switches are due, restart [${kind}]`,
        injected: `SIGKILL at a random point while ${SCHEDULED} posts fell due over 1.5 s`,
        count: ROUNDS,
        result: `${ids.length} scheduled posts (${switchedBeforeKill} switched before a kill, the rest after the restart): 0 lost, 0 published twice`,
      })
    })
  })
}
