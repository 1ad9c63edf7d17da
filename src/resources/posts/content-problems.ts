import { registerProblems } from '../../errors.ts'

declare module '../../errors.ts' { interface ResourceProblems { SLUG_TAKEN: true } }

registerProblems({
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
})
