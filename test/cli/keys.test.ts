import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../../src/app.ts'
import { hashSecret } from '../../src/http/pipeline/auth.ts'
import { bootstrapAdminKey } from '../../src/server.ts'
import { createContext, loadConfig, openStore } from '../../src/context.ts'
import { RESOURCES } from '../../src/registry.ts'
import { freshDatabase, json, JWT_SECRET, storeKinds } from '../helper.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const BIN = path.join(ROOT, 'bin/blog.js')
const KEY = /^blog_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/
/** The part after `blog_<id>_` (base64url, so it may itself contain `_`). */
const secretOf = (key: string) => key.slice('blog_'.length + 16 + 1)

/** Only what the CLI needs: no setting leaks in from the environment the tests run in. */
function baseEnv (extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'silent', ...extra }
}

async function cli (args: string[], env: Record<string, string>): Promise<{ code: number, stdout: string, stderr: string }> {
  return await new Promise(resolve => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: baseEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

/** Starts `blog serve` on a free port; resolves once it listens. */
async function serve (env: Record<string, string>): Promise<{ child: ChildProcess, url: string, stdout: () => string, stderr: () => string, stop: () => Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env: baseEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }) })
  let out = ''
  let err = ''
  child.stderr.on('data', c => { err += String(c) })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 30_000)
    child.stdout.on('data', c => {
      out += String(c)
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    })
    child.on('exit', code => reject(new Error(`serve exited with ${code}: ${err}`)))
  })
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    stop: async () => await new Promise(resolve => {
      child.once('exit', code => resolve(code))
      child.kill('SIGTERM')
    }),
  }
}

describe('blog keys', () => {
  let dir: string
  let env: Record<string, string>
  let token: string

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-cli-'))
    env = { DATABASE_URL: `sqlite:${path.join(dir, 'blog.db')}`, DATA_DIR: dir }
  })
  after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

  /** An app on the same database file, as `blog serve` would build it. */
  async function withApp<T> (fn: (inject: (headers: Record<string, string>) => Promise<{ statusCode: number, body: string, headers: Record<string, unknown> }>) => Promise<T>): Promise<T> {
    const config = loadConfig({ ...env, AUTH_JWT_SECRET: JWT_SECRET, LOG_LEVEL: 'silent', BOOTSTRAP_ADMIN_KEY: 'false' })
    const store = await openStore(config)
    const app = await buildApp(await createContext(config, { store }))
    try {
      return await fn(async headers => await app.inject({ method: 'POST', url: '/posts', headers, payload: { title: 'from ci', content: '' } }))
    } finally {
      await app.close()
      await store.close()
    }
  }

  it('keys create prints a key once, on stdout, and the key works', async () => {
    const res = await cli(['keys', 'create', '--name', 'ci', '--scopes', 'posts:write'], env)
    assert.equal(res.code, 0, res.stderr)
    token = res.stdout.trim()
    assert.match(token, KEY)
    assert.doesNotMatch(res.stderr, new RegExp(token), 'the key is not repeated on stderr')
    await withApp(async inject => {
      const created = await inject({ authorization: `Bearer ${token}` })
      assert.equal(created.statusCode, 201)
      assert.equal(json(created as never).author, 'ci')
    })
  })

  it('keeps only a hash of the secret in the database', async () => {
    const secret = secretOf(token)
    const config = loadConfig(env)
    const store = await openStore(config)
    try {
      const record = (await store.apiKeys.list()).find(k => k.name === 'ci')!
      assert.equal(record.hash, hashSecret(secret))
    } finally {
      await store.close()
    }
    for (const file of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
      if (!fs.statSync(path.join(dir, file)).isFile()) continue
      assert.ok(!fs.readFileSync(path.join(dir, file)).includes(secret), `${file} holds the secret`)
    }
  })

  it('keys list shows names and scopes, never secrets or hashes', async () => {
    const res = await cli(['keys', 'list'], env)
    assert.equal(res.code, 0, res.stderr)
    assert.match(res.stdout, /\bci\b.*posts:write/)
    assert.ok(!res.stdout.includes(secretOf(token)), 'no secret')
    assert.ok(!res.stdout.includes(hashSecret(secretOf(token))), 'no hash')
    assert.ok(!res.stdout.includes(token), 'no key')
  })

  it('refuses a second live key of the same name (exit 1)', async () => {
    const res = await cli(['keys', 'create', '--name', 'ci', '--scopes', 'admin'], env)
    assert.equal(res.code, 1)
    assert.match(res.stderr, /live key named "ci"/)
    assert.equal(res.stdout, '')
  })

  it('keys revoke makes the key fail with 401 invalid_token', async () => {
    const res = await cli(['keys', 'revoke', 'ci'], env)
    assert.equal(res.code, 0, res.stderr)
    await withApp(async inject => {
      const refused = await inject({ authorization: `Bearer ${token}` })
      assert.equal(refused.statusCode, 401)
      assert.match(String(refused.headers['www-authenticate']), /error="invalid_token"/)
    })
    assert.match((await cli(['keys', 'list'], env)).stdout, /\bci\b.*revoked/)
    assert.equal((await cli(['keys', 'revoke', 'ci'], env)).code, 1, 'nothing left to revoke')
  })

  it('exits 2 on bad arguments, making no key', async () => {
    for (const args of [
      ['--name', 'x', '--scopes', 'posts:wrte'],
      ['--name', 'x', '--scopes', 'posts:write superuser'],
      ['--name', 'x', '--scopes', ''],
      ['--name', 'x'],
      ['--scopes', 'admin'],
      ['--name', 'bad name!', '--scopes', 'admin'],
      ['--name', 'x', '--scopes', 'admin', '--expires', 'never'],
    ]) {
      const res = await cli(['keys', 'create', ...args], env)
      assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`)
      assert.equal(res.stdout, '', 'no key printed')
    }
    assert.doesNotMatch((await cli(['keys', 'list'], env)).stdout, /\bx\b/, 'no key was made')
  })
})

describe('help', () => {
  it('prints the usage with every registered scope, exit 0, wherever --help is asked for', async () => {
    for (const args of [['--help'], ['help'], ['keys', '--help'], ['keys', 'create', '--help'], ['keys', 'create', '-h']]) {
      const res = await cli(args, {})
      assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`)
      assert.match(res.stdout, /^Usage: blog <command>/)
      assert.ok(res.stdout.includes(`(scopes: ${[...RESOURCES.flatMap(r => r.scopes ?? []), 'admin'].join(' ')})`), res.stdout)
    }
  })
})

for (const setting of ['PORT', 'METRICS_PORT'] as const) {
  describe(`${setting === 'PORT' ? 'a port' : 'a metrics port'} already taken`, () => {
    it(`stops start-up with one line naming ${setting}, exit code 2, and makes no key`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-cli-'))
      const busy = net.createServer()
      await new Promise<void>(resolve => busy.listen(0, '127.0.0.1', resolve))
      try {
        const port = (busy.address() as net.AddressInfo).port
        const res = await cli(['serve'], { DATA_DIR: dir, PORT: '0', [setting]: String(port), LOG_LEVEL: 'silent' })
        assert.equal(res.code, 2)
        assert.match(res.stderr.trim(), new RegExp(`^bad setting ${setting}: cannot listen on 127\\.0\\.0\\.1:\\d+ \\(EADDRINUSE\\)$`))
        assert.doesNotMatch(res.stderr, /blog_/, 'no admin key was printed')
      } finally {
        await new Promise(resolve => busy.close(resolve))
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })
}

describe('a bad setting', () => {
  for (const [name, value, why] of [
    ['PORT', 'abc', /whole number/],
    ['PORT', '70000', /between/],
    ['AUTH_JWT_SECRET', 'short', /32 bytes/],
    ['AUTH_JWT_PUBLIC_KEY', '-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----', /readable/],
    ['OVERLOAD_MAX_WAIT_MS', '-1', /whole number/],
    ['AUTH_JWKS_URL', 'ftp://idp.example/jwks', /must use/],
    ['HOST', 'not_a_host..', /IP address or a host name/],
    ['DATABASE_URL', 'postgres://', /needs a host/],
    ['DATABASE_URL', 'sqlite:', /file path/],
    ['REVISIONS_KEEP', '0', /between 1 and 10000/],
    ['REVISIONS_KEEP', '10001', /between 1 and 10000/],
    ['METRICS_PORT', '3000', /differ from PORT/],
    ['METRICS_HOST', 'not_a_host..', /IP address or a host name/],
    ['METRICS_TOKEN', 'a-token-without-a-port', /needs METRICS_PORT/],
  ] as const) {
    it(`${name}=${value.slice(0, 20)} stops start-up with one line naming it, exit code 2`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-cli-'))
      try {
        const res = await cli(['serve'], { DATA_DIR: dir, [name]: value })
        assert.equal(res.code, 2)
        const lines = res.stderr.trimEnd().split('\n')
        assert.equal(lines.length, 1, res.stderr)
        assert.match(lines[0]!, new RegExp(`\\b${name}\\b`))
        assert.match(lines[0]!, why)
        assert.equal(fs.readdirSync(dir).length, 0, 'nothing was started')
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  }
})

for (const kind of await storeKinds()) {
  describe(`bootstrapAdminKey [${kind}]`, () => {
    it('makes one admin key on first start with no credential configured, none on the next, and keeps only its hash', async () => {
      const db = await freshDatabase(kind)
      const config = loadConfig({ DATABASE_URL: db.url, DATA_DIR: db.dataDir, LOG_LEVEL: 'silent' })
      const store = await openStore(config)
      try {
        await store.migrate()
        const token = await bootstrapAdminKey(config, store)
        assert.ok(token !== null)
        assert.match(token, KEY)
        const keys = await store.apiKeys.list()
        assert.equal(keys.length, 1)
        assert.deepEqual([...keys[0]!.scopes], ['admin'])
        assert.equal(keys[0]!.hash, hashSecret(secretOf(token)))
        assert.ok(!JSON.stringify(keys).includes(secretOf(token)), 'the store holds no secret')

        assert.equal(await bootstrapAdminKey(config, store), null, 'second start')
        await store.apiKeys.revoke('admin', new Date())
        assert.equal(await bootstrapAdminKey(config, store), null, 'not even after every key was revoked')
        assert.equal((await store.apiKeys.list()).length, 1)
      } finally {
        await store.close()
        await db.drop()
      }
    })

    it('makes no key when JWT verification is configured', async () => {
      const db = await freshDatabase(kind)
      const store = await openStore(loadConfig({ DATABASE_URL: db.url, DATA_DIR: db.dataDir }))
      try {
        await store.migrate()
        for (const auth of [{ AUTH_JWT_SECRET: JWT_SECRET }, { AUTH_JWKS_URL: 'https://idp.example/jwks.json' }]) {
          const config = loadConfig({ DATABASE_URL: db.url, DATA_DIR: db.dataDir, ...auth })
          assert.equal(await bootstrapAdminKey(config, store), null)
        }
        assert.equal((await store.apiKeys.list()).length, 0)
      } finally {
        await store.close()
        await db.drop()
      }
    })
  })
}

describe('blog serve with no credential configured', () => {
  let dir: string
  before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-serve-')) })
  after(() => { fs.rmSync(dir, { recursive: true, force: true }) })

  it('prints an admin key once, to stderr and not the log, that works; the next start prints none', async () => {
    const env = { DATABASE_URL: `sqlite:${path.join(dir, 'blog.db')}`, DATA_DIR: dir }
    const first = await serve(env)
    let token: string
    try {
      // The key is made once the port is taken, so it follows the "listening" line by a moment.
      for (let i = 0; i < 100 && !/blog_[0-9a-f]{16}_/.test(first.stderr()); i++) await new Promise(resolve => setTimeout(resolve, 20))
      token = /(blog_[0-9a-f]{16}_[A-Za-z0-9_-]{43})/.exec(first.stderr())?.[1] ?? ''
      assert.match(token, KEY, first.stderr())
      const res = await fetch(`${first.url}/posts`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'first', content: '' }) })
      assert.equal(res.status, 201)
      assert.equal((await res.json() as { author: string }).author, 'admin')
    } finally {
      assert.equal(await first.stop(), 0, 'SIGTERM exits 0')
    }
    assert.ok(!first.stdout().includes(token), 'the key is not in the log stream')
    assert.match(first.stdout(), /"status":201/, 'the log did record the request')

    const second = await serve(env)
    try {
      assert.doesNotMatch(second.stderr(), /blog_[0-9a-f]{16}_/)
      const res = await fetch(`${second.url}/posts`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'second', content: '' }) })
      assert.equal(res.status, 201, 'the first key still works')
    } finally {
      assert.equal(await second.stop(), 0)
    }
  })
})
