import { CORE_FIELD_CODES, CORE_PROBLEMS, type CoreProblemCode, type FieldCode, type ProblemCode, type ProblemDef } from './errors.ts'
import { CORE_TRANSLATIONS, type OtherLanguage, PROBLEM_LANGUAGES, type ProblemLanguage, type Text } from './errors-i18n.ts'
import { CORE_MESSAGES, type Message, type MessageKey } from './messages.ts'

/** A problem code a part declares: its status, its English texts and their translations. */
export interface ProblemDeclaration extends ProblemDef { readonly translations: Readonly<Record<OtherLanguage, Text>> }

/**
 * What a part of the service (a resource, a facility) adds to the catalogues, in its definition:
 * its problem codes, its codes of `errors[].code` with their texts, and the messages of its rules
 * in every language. The codes' types are declared beside them, by declaration merging.
 *
 * @example
 * declare module '../../errors.ts' { interface ResourceProblems { TICKET_NOT_FOUND: true } }
 * export const ticketsResource: Resource = { …, problems: { TICKET_NOT_FOUND: { status: 404, title, detail, translations } } }
 */
export interface CatalogueDeclarations {
  readonly problems?: Readonly<Record<string, ProblemDeclaration>>
  readonly fieldCodes?: Readonly<Record<string, string>>
  readonly messages?: Readonly<Record<ProblemLanguage, Readonly<Record<string, (p: never) => string>>>>
}

/** A part as the catalogue reads it: its name (to say who declared a code twice) and its declarations. */
export interface CataloguePart extends CatalogueDeclarations { readonly name: string }

/**
 * The service's catalogues, put together once from the core's and what each part declares: what
 * problems, the OpenAPI document and docs/errors.md are made of. Frozen.
 */
export interface Catalogue {
  /** Every problem code, in order of status (the core's first within one, then the parts' in their order). */
  readonly problems: Readonly<Record<ProblemCode, ProblemDef>>
  readonly translations: Readonly<Record<OtherLanguage, Readonly<Record<ProblemCode, Text>>>>
  /** Every code of `errors[].code` with its text: the core's, then the parts'. */
  readonly fieldCodes: Readonly<Record<FieldCode, string>>
  /** The words of a message in `lang`. */
  word (m: Message, lang: ProblemLanguage): string
}

// Every core code has its translations (a new core code without them fails to compile).
CORE_TRANSLATIONS satisfies Readonly<Record<OtherLanguage, Readonly<Record<CoreProblemCode, Text>>>>

type Template = (p: unknown) => string

/**
 * The catalogue of the core and `parts`, in their order; a code or message key may be declared
 * once. Depends only on what it is given: the order modules are loaded in cannot change it.
 *
 * @example
 * const catalogue = buildCatalogue(resources)
 * catalogue.problems.TICKET_NOT_FOUND.status // 404
 */
export function buildCatalogue (parts: readonly CataloguePart[]): Catalogue {
  const problems: Array<[string, ProblemDef]> = Object.entries(CORE_PROBLEMS)
  const translations = Object.fromEntries(PROBLEM_LANGUAGES.filter(l => l !== 'en').map(l => [l, { ...CORE_TRANSLATIONS[l as OtherLanguage] }])) as unknown as Record<OtherLanguage, Record<string, Text>>
  const fieldCodes: Record<string, string> = { ...CORE_FIELD_CODES }
  const templates = Object.fromEntries(PROBLEM_LANGUAGES.map(l => [l, { ...CORE_MESSAGES[l] }])) as unknown as Record<ProblemLanguage, Record<string, Template>>
  const seen = new Set(problems.map(([code]) => code))
  for (const part of parts) {
    for (const [code, { translations: texts, ...def }] of Object.entries(part.problems ?? {})) {
      if (seen.has(code)) throw new Error(`problem code ${code} is defined twice (again by ${part.name})`)
      seen.add(code)
      problems.push([code, Object.freeze(def)])
      for (const [lang, text] of Object.entries(texts)) translations[lang as OtherLanguage][code] = text
    }
    for (const [code, text] of Object.entries(part.fieldCodes ?? {})) {
      if (code in fieldCodes) throw new Error(`field code ${code} is defined twice (again by ${part.name})`)
      fieldCodes[code] = text
    }
    for (const lang of PROBLEM_LANGUAGES) {
      for (const [key, template] of Object.entries(part.messages?.[lang] ?? {})) {
        if (key in templates[lang]) throw new Error(`message ${key} is defined twice (again by ${part.name})`)
        templates[lang][key] = template as Template
      }
    }
  }
  // A stable sort: within one status, the core's codes first, then each part's in the parts' order.
  problems.sort(([, a], [, b]) => a.status - b.status)
  for (const lang of Object.keys(translations) as OtherLanguage[]) Object.freeze(translations[lang])
  for (const lang of PROBLEM_LANGUAGES) Object.freeze(templates[lang])
  return Object.freeze({
    problems: Object.freeze(Object.fromEntries(problems)) as Readonly<Record<ProblemCode, ProblemDef>>,
    translations: Object.freeze(translations) as Catalogue['translations'],
    fieldCodes: Object.freeze(fieldCodes) as Catalogue['fieldCodes'],
    word (m: Message, lang: ProblemLanguage): string {
      const template = templates[lang][m.key as MessageKey]
      if (template === undefined) throw new Error(`message ${m.key} is not in the catalogue`)
      return template(m.params)
    },
  })
}
