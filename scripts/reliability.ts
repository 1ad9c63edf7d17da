import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * `npm run reliability`: runs the reliability tests in their long forms (fuzzing, SIGKILL points,
 * overload, partitions, slow clients) against SQLite and PostgreSQL, and writes the table of what
 * was injected, how often and what happened into docs/reliability.md. Fails, writing nothing,
 * when a test fails. Needs PostgreSQL (TEST_PG_URL) like the suite does.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const RELIABILITY_DOC = path.join(ROOT, 'docs', 'reliability.md')
export const TABLE_START = '<!-- reliability-table:start (written by npm run reliability) -->'
export const TABLE_END = '<!-- reliability-table:end -->'
export const RELIABILITY_TESTS = [
  'test/facilities/events/callback-url.test.ts',
  'test/http/protocol/nul.test.ts',
  'test/http/pipeline/node-http.test.ts',
  'test/http/pipeline/shedding.test.ts',
  'test/http/pipeline/partition.test.ts',
  'test/http/memory.test.ts',
  'test/fuzz/fuzz.test.ts',
  'test/crash/crash.test.ts',
  'test/crash/idempotency-crash.test.ts',
]

interface Row { key: string, test: string, injected: string, count: number, result: string }

function cell (s: string): string {
  return s.replaceAll('|', '\\|').replaceAll('\n', ' ')
}

export function renderTable (rows: Row[], when: string): string {
  const lines = rows.map(r => `| ${cell(r.test)} <!-- ${r.key} --> | ${cell(r.injected)} | ${r.count.toLocaleString('en')} | ${cell(r.result)} |`)
  return [
    TABLE_START,
    `Measured ${when}.`,
    '',
    '| test | what was injected | times | result |',
    '|---|---|---:|---|',
    ...lines,
    TABLE_END,
  ].join('\n')
}

function main (): void {
  const record = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'blog-reliability-')), 'results.jsonl')
  const env = {
    ...process.env,
    CI: 'true',
    RELIABILITY_RECORD: record,
    FUZZ_RUNS: process.env.FUZZ_RUNS ?? '5000',
    FUZZ_RAW_RUNS: process.env.FUZZ_RAW_RUNS ?? '1000',
    CRASH_ROUNDS: process.env.CRASH_ROUNDS ?? '30',
    MEMORY_REQUESTS: process.env.MEMORY_REQUESTS ?? '600',
    SLOW_CLIENTS: process.env.SLOW_CLIENTS ?? '40',
    UNREAD_BODY_ROUNDS: process.env.UNREAD_BODY_ROUNDS ?? '50',
    IDEMPOTENCY_CRASH_ROUNDS: process.env.IDEMPOTENCY_CRASH_ROUNDS ?? '3',
    OPEN_LOOP_SECONDS: process.env.OPEN_LOOP_SECONDS ?? '6',
  }
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...RELIABILITY_TESTS], { cwd: ROOT, env, stdio: 'inherit' })
  if (run.status !== 0) {
    process.stderr.write('reliability: a test failed; docs/reliability.md was not changed\n')
    process.exit(run.status ?? 1)
  }
  const rows = fs.readFileSync(record, 'utf8').trim().split('\n').map(l => JSON.parse(l) as Row)
  const when = `${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} CPU cores, Node ${process.version}, with FUZZ_RUNS=${env.FUZZ_RUNS}, FUZZ_RAW_RUNS=${env.FUZZ_RAW_RUNS}, CRASH_ROUNDS=${env.CRASH_ROUNDS}, MEMORY_REQUESTS=${env.MEMORY_REQUESTS}`
  const doc = fs.readFileSync(RELIABILITY_DOC, 'utf8')
  const start = doc.indexOf(TABLE_START)
  const end = doc.indexOf(TABLE_END)
  const table = renderTable(rows, when)
  const next = start === -1 || end === -1 ? `${doc.trimEnd()}\n\n${table}\n` : doc.slice(0, start) + table + doc.slice(end + TABLE_END.length)
  fs.writeFileSync(RELIABILITY_DOC, next)
  process.stdout.write(`wrote ${rows.length} rows to docs/reliability.md\n`)
}

if (import.meta.url === `file://${process.argv[1]}`) main()
