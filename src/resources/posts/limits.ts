/**
 * A post's limits, as its content rules state them: constants only, with no import, so that every
 * side that holds a post to them (posts' schemas and rules, the import's mapping, the browser's
 * editor in web/admin/) reads the same numbers. A slug's rules are the core's (src/domain/slug.ts).
 */

/** A title: 1–200 characters after trimming. */
export const TITLE_MAX = 200
/** The Markdown content: 0–100 000 characters. */
export const CONTENT_MAX = 100_000
/** A derived excerpt holds the first 200 characters of the plain text; a given one at most 500. */
export const EXCERPT_DERIVED_LENGTH = 200
export const EXCERPT_MAX = 500
/** At most 20 tags per post, each 1–50 characters after trimming. */
export const TAGS_MAX = 20
export const TAG_MAX = 50
/** What search engines show: the title, the description and where the original lives. */
export const META_TITLE_MAX = 300
export const META_DESCRIPTION_MAX = 500
export const CANONICAL_URL_MAX = 2000
