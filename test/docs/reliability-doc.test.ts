import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { RELIABILITY_DOC, RELIABILITY_TESTS, TABLE_END, TABLE_START } from '../../scripts/reliability.ts'

const ROOT = path.dirname(path.dirname(RELIABILITY_DOC))

/** Every key a reliability test records with recordResult (template keys once per store). */
function recordedKeys (): string[] {
  const keys = new Set<string>()
  for (const file of RELIABILITY_TESTS) {
    const source = fs.readFileSync(path.join(ROOT, file), 'utf8')
    for (const m of source.matchAll(/recordResult\([`']([a-z-]+)(\$\{kind\})?[`']/g)) {
      if (m[2] === undefined) keys.add(m[1]!)
      else for (const kind of ['sqlite', 'postgres']) keys.add(`${m[1]!}${kind}`)
    }
  }
  return [...keys].sort()
}

describe('docs/reliability.md', () => {
  it('has a row, written by npm run reliability, for every figure the reliability tests record', () => {
    const doc = fs.readFileSync(RELIABILITY_DOC, 'utf8')
    const start = doc.indexOf(TABLE_START)
    const end = doc.indexOf(TABLE_END)
    assert.ok(start !== -1 && end > start, 'the generated table is there')
    const table = doc.slice(start, end)
    const keys = recordedKeys()
    assert.ok(keys.length >= 10, keys.join(' '))
    assert.deepEqual(keys.filter(k => !table.includes(`<!-- ${k} -->`)), [], 'run npm run reliability')
  })
})
