import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { generateApiKey } from '../../src/http/pipeline/auth.ts'
import { createContext, openStore } from '../../src/context.ts'
import type { Store } from '../../src/store/store.ts'
import { freshDatabase, testConfig } from '../helper.ts'
import { until } from '../support/poll.ts'
import { docFiles, type DocBlock, type DocCommand, parseDoc } from './examples.ts'

/**
 * Runs every curl example of README.md and docs/*.md against a live instance and fails when the
 * status an example shows is not the status the service answers (docs/README.md has the rules:
 * what a block may declare, how it opts out). Each file gets an instance of its own on a fresh
 * SQLite database; its blocks run in order, sharing it, as a reader going down the page would.
 */

const ROOT = path.resolve(import.meta.dirname, '../..')
// How long a command that is answered "not yet" (a Retry-After) is retried, as a client would.
const RETRY_FOR_MS = 20_000

interface Instance { app: FastifyInstance, store: Store, base: string, env: Record<string, string> }

interface Answer { statuses: number[], headers: Record<string, string>, stdout: string, stderr: string, exitCode: number }

class DocsSession {
  private instance: Instance | undefined
  private db: Awaited<ReturnType<typeof freshDatabase>> | undefined
  private key = ''
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-docs-'))
  private readonly state = path.join(this.dir, 'state.sh')
  private readonly headers = path.join(this.dir, 'headers.txt')
  /** Values an example shows (an ETag, a Location) mapped to what this instance answered instead. */
  private readonly seen = new Map<string, string>()

  async start (env: Record<string, string>): Promise<void> {
    if (this.instance !== undefined && JSON.stringify(this.instance.env) === JSON.stringify(env)) return
    await this.stopInstance()
    this.db ??= await freshDatabase('sqlite')
    const config = testConfig(this.db.url, this.db.dataDir, env)
    const store = await openStore(config)
    await store.migrate()
    if (this.key === '') {
      const key = generateApiKey()
      await store.apiKeys.create({ id: key.id, name: 'admin', scopes: ['admin'], hash: key.hash }, new Date())
      this.key = key.token
    }
    const app = await buildApp(await createContext(config, { store }))
    await app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.server.address() as { port: number }
    this.instance = { app, store, base: `http://127.0.0.1:${port}`, env }
    // What the examples take as given: the service's address, and an admin key as $KEY (or $TOKEN).
    fs.writeFileSync(this.state, `export B=${this.instance.base} KEY=${this.key} TOKEN=${this.key}\n`)
    fs.writeFileSync(path.join(this.dir, '.curlrc'), [
      // After each transfer, its status on stderr (never into a pipe the example reads from).
      'write-out = "%{stderr}@@status %{http_code}\\n"',
      `dump-header = "${this.headers}"`,
      // No progress meter in a failure's output; errors still shown.
      'silent',
      'show-error',
      '',
    ].join('\n'))
  }

  /** Runs one command as the example has it, with $B, $KEY and the variables earlier commands set. */
  async run (command: string): Promise<Answer> {
    const base = this.instance!.base
    let text = command.replaceAll('http://127.0.0.1:3000', base).replaceAll('http://localhost:3000', base)
    for (const [shown, actual] of this.seen) text = text.replace(new RegExp(`${escape(shown)}(?![\\w-])`, 'g'), actual)
    fs.rmSync(this.headers, { force: true })
    const script = `set -a\n. '${this.state}'\n${text}\n__rc=$?\nexport -p > '${this.state}'\nexit $__rc\n`
    const { stdout, stderr, exitCode } = await new Promise<{ stdout: string, stderr: string, exitCode: number }>(resolve => {
      execFile('bash', ['-c', script], { cwd: this.dir, env: { PATH: process.env.PATH, HOME: this.dir, CURL_HOME: this.dir, LANG: 'C.UTF-8' }, timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ stdout, stderr, exitCode: err === null ? 0 : typeof err.code === 'number' ? err.code : 1 })
      })
    })
    const statuses = [...stderr.matchAll(/^@@status (\d{3})$/gm)].map(m => Number(m[1]))
    // An example that dumps the headers itself (`-D -`) overrides the runner's dump: read them from its output.
    const headers = lastHeaders(fs.existsSync(this.headers) ? fs.readFileSync(this.headers, 'utf8') : stdout)
    return { statuses, headers, stdout, stderr: stderr.replace(/^@@status \d{3}\n/gm, ''), exitCode }
  }

  /** Remembers what this instance answered where the example shows another ETag or Location. */
  learn (cmd: DocCommand, answer: Answer): void {
    for (const [name, shown] of Object.entries(cmd.shownHeaders)) {
      const actual = answer.headers[name]
      if (actual === undefined || actual === shown) continue
      const [from, to] = name === 'etag' ? [shown.replace(/^(W\/)?"|"$/g, ''), actual.replace(/^(W\/)?"|"$/g, '')] : [shown, actual]
      if (from !== '' && to !== '') this.seen.set(from, to)
    }
  }

  async stopInstance (): Promise<void> {
    if (this.instance === undefined) return
    await this.instance.app.close()
    await this.instance.store.close()
    this.instance = undefined
  }

  async close (): Promise<void> {
    await this.stopInstance()
    await this.db?.drop()
    fs.rmSync(this.dir, { recursive: true, force: true })
  }
}

function escape (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The headers of the last response in a header dump (lower-case names). */
function lastHeaders (dump: string): Record<string, string> {
  const responses = dump.split(/\r?\n\r?\n/).filter(r => r.startsWith('HTTP/'))
  const out: Record<string, string> = {}
  for (const line of (responses.at(-1) ?? '').split(/\r?\n/).slice(1)) {
    const i = line.indexOf(':')
    if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
  }
  return out
}

function brief (text: string): string {
  const lines = text.trim().split('\n')
  return lines.length <= 6 ? lines.join('\n') : [lines[0], '…', ...lines.slice(-5)].join('\n')
}

const usesCurl = (cmd: DocCommand): boolean => /(^|[\s|;&(])curl\s/.test(cmd.text)

function expectation (cmd: DocCommand): string {
  if (!usesCurl(cmd)) return 'a command that succeeds (exit code 0)'
  return cmd.statuses.length > 0 ? `HTTP ${cmd.statuses.join(' or ')}` : 'a 2xx answer (the example shows no status)'
}

function met (cmd: DocCommand, answer: Answer): boolean {
  if (!usesCurl(cmd)) return answer.exitCode === 0
  if (answer.statuses.length === 0) return false
  const last = answer.statuses.at(-1)!
  return cmd.statuses.length > 0 ? cmd.statuses.includes(last) : answer.statuses.every(s => s >= 200 && s < 300)
}

async function runCommand (session: DocsSession, file: string, block: DocBlock, cmd: DocCommand): Promise<void> {
  let answer = await session.run(cmd.text)
  // Work that is still under way answers "not yet" with Retry-After: ask again until it is done
  // (a bounded poll; the failure below tells what it answered last).
  const settled = async () => {
    if (met(cmd, answer) || answer.headers['retry-after'] === undefined) return true
    answer = await session.run(cmd.text)
    return false
  }
  await until(settled, `${cmd.text} to be done`, RETRY_FOR_MS, 100).catch(() => {})
  if (!met(cmd, answer)) {
    assert.fail([
      `${file}:${cmd.line} (the ${block.lang} block at line ${block.line}) shows ${expectation(cmd)}, but ${!usesCurl(cmd) ? `it exited with ${answer.exitCode}` : answer.statuses.length > 0 ? `the service answered ${answer.statuses.join(', then ')}` : 'curl did not reach the service'}`,
      `$ ${cmd.text}`,
      ...(answer.stdout.trim() === '' ? [] : ['--- stdout (its first line and its last five)', brief(answer.stdout)]),
      ...(answer.stderr.trim() === '' ? [] : ['--- stderr', answer.stderr.trim().split('\n').slice(0, 10).join('\n')]),
    ].join('\n'))
  }
  session.learn(cmd, answer)
}

for (const file of docFiles(ROOT)) {
  const blocks = parseDoc(fs.readFileSync(path.join(ROOT, file), 'utf8'))
  if (blocks.length === 0) continue
  describe(`the curl examples of ${file}`, () => {
    const session = new DocsSession()
    before(async () => { await session.start({}) })
    after(async () => { await session.close() })
    for (const block of blocks) {
      const name = `the block at ${file}:${block.line} (${block.commands.length} command${block.commands.length === 1 ? '' : 's'})`
      if (block.skip !== undefined) {
        it(name, { skip: `docs-test: skip: ${block.skip}` }, () => {})
        continue
      }
      it(name, async () => {
        await session.start(block.env)
        for (const cmd of block.setup) await runCommand(session, file, block, cmd)
        for (const cmd of block.commands) await runCommand(session, file, block, cmd)
      })
    }
  })
}

describe('the docs runner itself', () => {
  const doc = [
    '# A page',
    '',
    '```sh',
    'KEY=blog_…   B=http://127.0.0.1:3000',
    'curl -i $B/posts/999',
    '# HTTP/1.1 200 OK',
    '```',
    '',
    '<!-- docs-test: skip the host of this example is made up -->',
    '```sh',
    'curl -i https://blog.example.com/posts',
    '```',
    '',
    '<!-- docs-test: env RATE_LIMIT_MAX=5 -->',
    '```bash',
    'curl -s $B/healthz \\',
    '  -H "Accept: application/json"',
    '```',
  ].join('\n')

  it('reads commands, the statuses they show, the settings a block needs and why one is skipped', () => {
    const blocks = parseDoc(doc)
    assert.equal(blocks.length, 3)
    assert.deepEqual(blocks[0]!.commands.map(c => ({ text: c.text, line: c.line, statuses: c.statuses })), [{ text: 'curl -i $B/posts/999', line: 5, statuses: [200] }])
    assert.equal(blocks[1]!.skip, 'the host of this example is made up')
    assert.deepEqual(blocks[2]!.env, { RATE_LIMIT_MAX: '5' })
    assert.equal(blocks[2]!.commands[0]!.text, 'curl -s $B/healthz \\\n  -H "Accept: application/json"')
  })

  it('refuses a skip without a reason, and a marker before a block it cannot apply to', () => {
    assert.throws(() => parseDoc('<!-- docs-test: skip -->\n```sh\ncurl $B\n```\n'), /gives no reason/)
    assert.throws(() => parseDoc('<!-- docs-test: env A=1 -->\n```json\n{}\n```\n'), /at line 1 is not followed by a shell block with a curl command/)
  })

  it('fails naming the file, the block and the line when the service answers another status', async () => {
    const session = new DocsSession()
    try {
      await session.start({})
      const [block] = parseDoc(doc)
      await assert.rejects(runCommand(session, 'docs/page.md', block!, block!.commands[0]!),
        (err: Error) => err.message.startsWith('docs/page.md:5 (the sh block at line 3) shows HTTP 200, but the service answered 404'))
    } finally {
      await session.close()
    }
  })
})
