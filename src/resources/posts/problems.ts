import { registerProblems } from '../../errors-i18n.ts'

declare module '../../errors.ts' { interface ResourceProblems { POST_NOT_FOUND: true } }

registerProblems({
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
})
