import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { openStore } from '../../src/context.ts'
import { freshDatabase, storeKinds } from '../helper.ts'
import { recordResult } from '../reliability-record.ts'
import { processEnv, startInstance, token } from '../process-helper.ts'

// At most 3: the checks read the posts back in one page of 100.
const ROUNDS = Math.min(3, Number(process.env.IDEMPOTENCY_CRASH_ROUNDS ?? 2))
const PER_ROUND = 30

/**
 * Kill -9 the service while it answers POSTs with Idempotency-Keys: afterwards each key's stored
 * response and its post exist together or not at all, and retrying every key yields each post once.
 */
for (const kind of await storeKinds()) {
  describe(`Idempotency-Key across a crash [${kind}]`, () => {
    it('never keeps a post without its record or a record without its post, and a retry completes each once', async (t) => {
      const db = await freshDatabase(kind)
      // One instance, restarted under its name: it frees the claims the killed process left at
      // start-up (before: they blocked retries with 409 until REQUEST_TIMEOUT_MS + 5 s).
      const env = processEnv(db, { REQUEST_TIMEOUT_MS: '30000', INSTANCE_ID: 'the-one' })
      const headers = { authorization: `Bearer ${await token('crasher', ['posts:write'])}`, 'content-type': 'application/json' }
      const keys: string[] = []
      let inUse = 0
      let leftRunning = 0
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const i = await startInstance(`crash ${round}`, env)
          // Killed once a random few have been answered: the rest are somewhere between claim and commit.
          const killAfter = 2 + Math.floor(Math.random() * (PER_ROUND / 2))
          let answered = 0
          let killed = () => {}
          const enough = new Promise<void>(resolve => { killed = resolve })
          const sent = Array.from({ length: PER_ROUND }, async (_, n) => {
            const key = `crash-${round}-${n}`
            keys.push(key)
            const res = await fetch(`${i.base}/posts`, { method: 'POST', headers: { ...headers, 'idempotency-key': key }, body: JSON.stringify({ title: key, content: '' }) }).catch(() => null)
            if (res !== null && ++answered >= killAfter) killed()
          })
          await Promise.race([enough, Promise.all(sent)])
          i.child.kill('SIGKILL')
          await Promise.all([i.exited, ...sent])
        }

        const store = await openStore({ databaseUrl: db.url, pgPoolMax: 2 }) as KyselyStore
        try {
          const records = await store.db.selectFrom('idempotency_keys').select(['key', 'state', 'headers']).execute()
          const posts = (await store.posts.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 100 }, { subject: 'root', scopes: new Set(['admin']), kind: 'jwt' })).items
          const done = new Map(records.filter(r => r.state === 'done').map(r => [r.key, JSON.parse(r.headers!) as Record<string, string>]))
          for (const post of posts) {
            assert.equal(posts.filter(p => p.title === post.title).length, 1, `${post.title} was created once`)
            assert.equal(done.get(post.title)?.location, `/posts/${post.id}`, `${post.title} has its record`)
          }
          for (const key of done.keys()) assert.ok(posts.some(p => p.title === key), `${key}'s record has its post`)
          leftRunning = records.length - done.size
          t.diagnostic(`${keys.length} keyed POSTs, ${ROUNDS} SIGKILLs: ${posts.length} done before the kills, ${records.length - done.size} claims left running`)
        } finally {
          await store.close()
        }

        // Every client retries until it has its answer: each post ends up existing exactly once.
        const i = await startInstance('after the crashes', env)
        try {
          for (const key of keys) {
            for (let attempt = 0; ; attempt++) {
              const res = await fetch(`${i.base}/posts`, { method: 'POST', headers: { ...headers, 'idempotency-key': key }, body: JSON.stringify({ title: key, content: '' }) })
              await res.arrayBuffer()
              if (res.status === 201) break
              assert.equal(res.status, 409, key)
              inUse++
              assert.ok(attempt < 20, `${key} still in use`)
              // Real time on purpose: a client of another process honours Retry-After (a passing run never waits: inUse stays 0).
              await sleep(Number(res.headers.get('retry-after')) * 1000)
            }
          }
          const list = await (await fetch(`${i.base}/posts?limit=100`, { headers })).json() as { title: string }[]
          assert.deepEqual(list.map(p => p.title).sort(), [...keys].sort())
          assert.equal(inUse, 0, 'a retry after the restart met a claim of the killed process')
          recordResult(`idempotency-crash-${kind}`, { test: `SIGKILL during keyed POSTs, restart, retry every key [${kind}]`, injected: `SIGKILL at a random point of ${PER_ROUND} concurrent POSTs with Idempotency-Keys, REQUEST_TIMEOUT_MS=30000`, count: ROUNDS, result: `${keys.length} keys, ${leftRunning} claims left by the kills; every retry after the restart answered at once: 0 × 409 (before: 409 until REQUEST_TIMEOUT_MS + 5 s), each post created once` })
        } finally {
          i.child.kill('SIGTERM')
          await i.exited
        }
      } finally {
        await db.drop()
      }
    })
  })
}
