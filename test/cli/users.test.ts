import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { loadConfig, openStore } from '../../src/context.ts'
import { instanceOn, json } from '../helper.ts'
import { BIN, ROOT } from '../process-helper.ts'

const PASSWORD = 'a long pass phrase for olive'
const ID = /^[A-Za-z0-9_-]{22}$/

interface Run { code: number, stdout: string, stderr: string }

/** Runs `blog …` on the test's database; `input` is piped into its standard input (which then ends). */
async function cli (env: Record<string, string>, args: string[], input = ''): Promise<Run> {
  return await new Promise(resolve => {
    const child = execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'silent', ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })
    })
    child.stdin!.end(input)
  })
}

/** A refusal as every command reports one: its exit code, one line on stderr (no stack), nothing on stdout. */
function refused (res: Run, code: number, why: RegExp): void {
  assert.equal(res.code, code, res.stderr)
  assert.equal(res.stdout, '')
  const lines = res.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, res.stderr)
  assert.match(lines[0]!, why)
}

describe('blog users', () => {
  let dir: string
  let db: { url: string, dataDir: string }
  let env: Record<string, string>
  let ownerId: string
  let authorId: string

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-users-'))
    db = { url: `sqlite:${path.join(dir, 'blog.db')}`, dataDir: dir }
    env = { DATABASE_URL: db.url, DATA_DIR: dir }
  })
  after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

  /** The service, built as production builds it, on the same database file. */
  async function withApp<T> (fn: (app: FastifyInstance) => Promise<T>): Promise<T> {
    const { app, store } = await instanceOn(db.url, dir)
    try {
      return await fn(app)
    } finally {
      await app.close()
      await store.close()
    }
  }
  const signIn = async (app: FastifyInstance, email: string, password: string) => await app.inject({ method: 'POST', url: '/sessions', payload: { email, password } })

  it('users create --role owner, the password piped in, makes the owner and prints their id', async () => {
    const res = await cli(env, ['users', 'create', '--email', 'Olive@Example.com', '--name', 'Olive', '--role', 'owner'], `${PASSWORD}\n`)
    assert.equal(res.code, 0, res.stderr)
    ownerId = res.stdout.trim()
    assert.match(ownerId, ID)
    assert.ok(!res.stderr.includes(PASSWORD))
    await withApp(async app => {
      const session = await signIn(app, 'olive@example.com', PASSWORD)
      assert.equal(session.statusCode, 201, session.body)
      assert.equal(json(session).user.role, 'owner')
    })
  })

  it('makes a user of another role, and refuses a second owner, a common password and bad arguments', async () => {
    // Independent runs, at once: each is a process start.
    const [author, owner, common, badEmail, badRole, missing, unknown] = await Promise.all([
      cli(env, ['users', 'create', '--email', 'ada@example.com', '--name', 'Ada Lovelace', '--role', 'author'], 'another long pass phrase\n'),
      cli(env, ['users', 'create', '--email', 'otto@example.com', '--name', 'Otto', '--role', 'owner'], 'yet another long phrase\n'),
      cli(env, ['users', 'create', '--email', 'bob@example.com', '--name', 'Bob', '--role', 'editor'], 'qwerty123456\n'),
      cli(env, ['users', 'create', '--email', 'not-an-email', '--name', 'X', '--role', 'author']),
      cli(env, ['users', 'create', '--email', 'x@example.com', '--name', 'X', '--role', 'boss']),
      cli(env, ['users', 'create', '--email', 'x@example.com', '--name', 'X']),
      cli(env, ['users', 'suspend', '--email', 'nobody@example.com']),
    ])
    assert.equal(author.code, 0, author.stderr)
    authorId = author.stdout.trim()
    assert.match(authorId, ID)
    refused(owner, 1, /^users create: The blog has an owner/)
    refused(common, 1, /^users create: This password is too common/)
    refused(badEmail, 2, /not an email address/)
    refused(badRole, 2, /--role must be one of: contributor author editor admin owner$/)
    refused(missing, 2, /--role .*needed/)
    refused(unknown, 1, /^users suspend: no user .*nobody@example\.com$/)
  })

  it('users list prints every user under a header, and --json the same', async () => {
    const [text, asJson] = await Promise.all([cli(env, ['users', 'list']), cli(env, ['users', 'list', '--json'])])
    assert.equal(text.code, 0, text.stderr)
    const lines = text.stdout.trimEnd().split('\n')
    assert.match(lines[0]!, /^ID\s+EMAIL\s+NAME\s+SLUG\s+ROLE\s+STATUS$/)
    assert.equal(lines.length, 3, text.stdout)
    assert.match(text.stdout, new RegExp(`^${authorId}\\s+ada@example\\.com\\s+Ada Lovelace\\s+ada-lovelace\\s+author\\s+active$`, 'm'))
    assert.match(text.stdout, new RegExp(`^${ownerId}\\s+olive@example\\.com\\s+Olive\\s+olive\\s+owner\\s+active$`, 'm'))
    assert.equal(asJson.code, 0, asJson.stderr)
    const users = JSON.parse(asJson.stdout) as Array<{ id: string, email: string, role: string, status: string }>
    assert.deepEqual(users.map(u => [u.id, u.email, u.role, u.status]).sort(), [[authorId, 'ada@example.com', 'author', 'active'], [ownerId, 'olive@example.com', 'owner', 'active']].sort())
  })

  it('users reset-password prints a link whose token sets the password through the API; suspending the owner is refused', async () => {
    const [reset, owner] = await Promise.all([cli(env, ['users', 'reset-password', '--email', 'ada@example.com']), cli(env, ['users', 'suspend', ownerId])])
    refused(owner, 1, /^users suspend: The owner cannot be suspended/)
    assert.equal(reset.code, 0, reset.stderr)
    const link = reset.stdout.trim()
    assert.match(link, /\/admin\/reset#[A-Za-z0-9_-]{43}$/)
    const token = link.slice(link.indexOf('#') + 1)
    await withApp(async app => {
      const used = await app.inject({ method: 'POST', url: '/password-resets', payload: { token, password: 'the reset long phrase' } })
      assert.equal(used.statusCode, 204, used.body)
      assert.equal((await signIn(app, 'ada@example.com', 'the reset long phrase')).statusCode, 201)
      const again = await app.inject({ method: 'POST', url: '/password-resets', payload: { token, password: 'one more long phrase' } })
      assert.equal(again.statusCode, 404, 'the link is used once')
      assert.equal((await signIn(app, 'olive@example.com', PASSWORD)).statusCode, 201, 'the owner was not suspended')
    })
  })

  it('users suspend ends the user\'s sessions and sign-in, recording user.suspended by the system', async () => {
    const refreshToken = await withApp(async app => json(await signIn(app, 'ada@example.com', 'the reset long phrase')).refresh_token as string)
    const res = await cli(env, ['users', 'suspend', '--id', authorId])
    assert.equal(res.code, 0, res.stderr)
    await withApp(async app => {
      assert.equal((await signIn(app, 'ada@example.com', 'the reset long phrase')).statusCode, 401)
      const refreshed = await app.inject({ method: 'POST', url: '/sessions/refresh', payload: { refresh_token: refreshToken } })
      assert.equal(refreshed.statusCode, 401, 'the session ended')
      assert.equal(json(refreshed).code, 'SESSION_REVOKED')
    })
    const store = await openStore(loadConfig(env))
    try {
      const suspended = (await store.events.list(0, 1000)).filter(e => e.type === 'user.suspended')
      assert.equal(suspended.length, 1)
      assert.equal(JSON.parse(suspended[0]!.data).id, authorId)
      assert.deepEqual(JSON.parse(suspended[0]!.actor!), { kind: 'system', id: null, name: 'system' })
    } finally {
      await store.close()
    }
  })
})
