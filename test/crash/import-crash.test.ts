import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, describe, it } from 'node:test'
import { sql } from 'kysely'
import { loadConfig, openStore } from '../../src/context.ts'
import type { KyselyStore } from '../../src/store/kysely-store.ts'
import { freshDatabase, storeKinds } from '../helper.ts'
import { processEnv, startInstance, token } from '../process-helper.ts'
import { wxr, wxrPost } from '../resources/imports/import-helper.ts'
import { untilValue } from '../support/poll.ts'

/**
 * An import survives the death of its instance: SIGKILL while it writes its batches, start another
 * instance, and the import ends with each post of the file written exactly once.
 */
const POSTS = 4000

async function kill (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

async function job (base: string, authorization: string, location: string): Promise<any> {
  const res = await fetch(`${base}${location}`, { headers: { authorization } })
  assert.equal(res.status, 200)
  return await res.json()
}

for (const kind of await storeKinds()) {
  describe(`crash durability: SIGKILL during an import [${kind}]`, () => {
    let drop: (() => Promise<void>) | undefined
    after(async () => { await drop?.() })

    it(`writes each of ${POSTS} posts exactly once across a kill and a restart`, async () => {
      const db = await freshDatabase(kind)
      drop = db.drop
      // Small batches and a short lease: the kill falls among many commits, and the next instance takes the job up soon.
      const env = processEnv(db, { RATE_LIMIT_MAX: '0', IMPORT_BATCH_SIZE: '20', IMPORT_LEASE_MS: '1500', IMPORT_POLL_MS: '100' })
      const authorization = `Bearer ${await token('root', ['admin'])}`
      const file = wxr(Array.from({ length: POSTS }, (_, i) => wxrPost(i + 1, `Crash post ${i + 1}`, `<p>Body <em>${i + 1}</em> ${'words '.repeat(40)}</p>`)))

      let { child, base } = await startInstance('import crash', env)
      let location: string
      let atKill: any
      try {
        const res = await fetch(`${base}/imports`, { method: 'POST', headers: { authorization, 'content-type': 'application/xml' }, body: file })
        assert.equal(res.status, 202, await res.clone().text())
        location = res.headers.get('location')!
        atKill = await untilValue(async () => await job(base, authorization, location), j => j.report.posts.created >= 200, 60_000)
        await kill(child)
      } finally {
        await kill(child)
      }
      assert.equal(atKill.status, 'running', 'killed while it ran')
      assert.ok(atKill.report.posts.created < POSTS, 'killed before it ended')

      ;({ child, base } = await startInstance('import restart', env))
      let done: any
      try {
        done = await untilValue(async () => await job(base, authorization, location), j => j.status === 'succeeded' || j.status === 'failed', 120_000)
      } finally {
        await kill(child)
      }
      assert.equal(done.status, 'succeeded', done.failure)
      assert.deepEqual(done.report.posts, { created: POSTS, updated: 0, unchanged: 0, skipped: 0 })

      const store = await openStore(loadConfig(env)) as KyselyStore
      try {
        const { rows } = await sql<{ title: string, n: number | string }>`SELECT title, COUNT(*) AS n FROM posts GROUP BY title`.execute(store.db)
        assert.equal(rows.length, POSTS, 'every post is there')
        assert.deepEqual(rows.filter(r => Number(r.n) !== 1), [], 'none twice')
        const identities = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM import_sources`.execute(store.db)
        assert.equal(Number(identities.rows[0]!.n), POSTS)
        const uploads = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM import_uploads`.execute(store.db)
        assert.equal(Number(uploads.rows[0]!.n), 0, 'the file is deleted once the import ended')
      } finally {
        await store.close()
      }
    })
  })
}
