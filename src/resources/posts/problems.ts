import type { ProblemDeclaration } from '../../catalogue.ts'

declare module '../../errors.ts' {
  interface ResourceProblems { POST_NOT_FOUND: true, REVISION_NOT_FOUND: true, SLUG_TAKEN: true }
  interface ResourceFieldCodes { PUBLISH_AT_REQUIRED: true, PUBLISH_AT_IN_PAST: true, PUBLISH_AT_NOT_ALLOWED: true }
}

/** Its problem codes. */
export const postsProblems = {
  POST_NOT_FOUND: {
    status: 404,
    title: 'Post not found',
    detail: 'No post with this id exists, or you may not see it.',
    translations: {
      de: { title: 'Beitrag nicht gefunden', detail: 'Es gibt keinen Beitrag mit dieser ID, oder Sie dürfen ihn nicht sehen.' },
      fr: { title: 'Article introuvable', detail: 'Aucun article ne porte cet identifiant, ou vous ne pouvez pas le voir.' },
      es: { title: 'Entrada no encontrada', detail: 'No existe ninguna entrada con este id, o no puede verla.' },
    },
  },
  REVISION_NOT_FOUND: {
    status: 404,
    title: 'Revision not found',
    detail: 'This post has no revision with this number (it never existed or was pruned), or you may not see its revisions.',
    translations: {
      de: { title: 'Revision nicht gefunden', detail: 'Dieser Beitrag hat keine Revision mit dieser Nummer (es gab sie nie, oder sie wurde verworfen), oder Sie dürfen seine Revisionen nicht sehen.' },
      fr: { title: 'Révision introuvable', detail: 'Cet article n’a pas de révision portant ce numéro (elle n’a jamais existé ou a été élaguée), ou vous ne pouvez pas voir ses révisions.' },
      es: { title: 'Revisión no encontrada', detail: 'Esta entrada no tiene ninguna revisión con este número (nunca existió o se descartó), o no puede ver sus revisiones.' },
    },
  },
  SLUG_TAKEN: {
    status: 409,
    title: 'Slug taken',
    detail: 'Another post holds this slug, as its own or as an old one it was renamed from. Choose another.',
    translations: {
      de: { title: 'Slug vergeben', detail: 'Ein anderer Beitrag trägt diesen Slug, als eigenen oder als früheren. Wählen Sie einen anderen.' },
      fr: { title: 'Slug déjà pris', detail: 'Un autre article porte ce slug, comme le sien ou comme un ancien. Choisissez-en un autre.' },
      es: { title: 'Slug ocupado', detail: 'Otra entrada tiene este slug, como propio o como uno anterior. Elija otro.' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>

/** The scheduling rules' codes in a 422's `errors[]` (schedule.ts). */
export const postsFieldCodes = {
  PUBLISH_AT_REQUIRED: 'A scheduled post needs publish_at, the moment it is to be published.',
  PUBLISH_AT_IN_PAST: 'publish_at must lie in the future.',
  PUBLISH_AT_NOT_ALLOWED: 'publish_at belongs only to a post with status scheduled.',
} satisfies Readonly<Record<string, string>>
