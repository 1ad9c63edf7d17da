import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import { ERRORS_DOC, renderErrorsDoc } from '../../scripts/gen-errors-doc.ts'
import { catalogueOf } from '../../src/context.ts'
import { problemSlug } from '../../src/errors.ts'

const PROBLEMS = catalogueOf().problems
const FIELD_CODES = catalogueOf().fieldCodes

describe('docs/errors.md', () => {
  it('is up to date with src/errors.ts (run npm run docs:errors)', () => {
    assert.ok(fs.existsSync(ERRORS_DOC), 'docs/errors.md exists')
    assert.equal(fs.readFileSync(ERRORS_DOC, 'utf8'), renderErrorsDoc(), 'docs/errors.md is stale: run npm run docs:errors')
  })

  it('names every code with its status and title, and every field code', () => {
    const doc = renderErrorsDoc()
    for (const [code, p] of Object.entries(PROBLEMS)) {
      assert.ok(doc.includes(`| \`${code}\` | ${p.status} | ${p.title} |`), code)
      assert.ok(doc.includes(`### ${problemSlug(code)}`), `${code} has a section`)
    }
    for (const code of Object.keys(FIELD_CODES)) assert.ok(doc.includes(`| \`${code}\` |`), code)
  })
})
