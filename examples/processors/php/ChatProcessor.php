<?php

declare(strict_types=1);

/**
 * A chat processor in the shape of the Drupal AI module's contract: the
 * caller hands it the user's message, runs execute() for the reply's text,
 * then reads the structured response (content blocks and message _meta)
 * and, when the processor wants to ask the user something, the pending
 * elicitation. When the user answers, setElicitationResult() is called
 * before execute() on a fresh instance: the processor keeps nothing between
 * requests, only the state it handed over with its question.
 *
 * It greets, shows an entity card ("card 42") and asks a contact form
 * ("form").
 */
final class ChatProcessor
{
    private array $contentBlocks = [];
    private array $meta = [];
    private ?array $pendingElicitation = null;
    private mixed $pendingState = null;
    private ?array $elicitationResult = null;
    private mixed $resumeState = null;

    /**
     * @param string $principal The user chatd authenticated.
     * @param array $history The recent messages, oldest first.
     */
    public function __construct(private readonly string $principal, private readonly array $history = [])
    {
    }

    /**
     * Hands over the user's answer to this processor's earlier question and
     * the state it paused with.
     *
     * @param array $result {action, content?, _meta?}, already checked by
     *   chatd against the form's schema.
     */
    public function setElicitationResult(array $result, mixed $state): void
    {
        $this->elicitationResult = $result;
        $this->resumeState = $state;
    }

    /**
     * Runs the turn and returns the reply's text, which is what a client
     * that knows nothing of blocks shows.
     */
    public function execute(string $message): string
    {
        if ($this->elicitationResult !== null) {
            return $this->resume();
        }
        $message = trim($message);
        if (preg_match('/^card\s+(\d+)$/i', $message, $m)) {
            $this->contentBlocks[] = self::entityCard($m[1]);
            return "Here is article {$m[1]}.";
        }
        if (strcasecmp($message, 'form') === 0) {
            $this->pendingElicitation = self::contactForm();
            $this->pendingState = ['step' => 'contact', 'asked_at' => gmdate(DATE_ATOM)];
            return 'I need a few details first.';
        }
        $this->meta['drupal.org/ai.suggested_replies'] = ['card 42', 'form'];
        return "Hello, {$this->principal}! You said: {$message}";
    }

    /**
     * Returns the reply's content blocks and message _meta.
     *
     * @return array{content_blocks: array, _meta: array}
     */
    public function getStructuredResponse(): array
    {
        return ['content_blocks' => $this->contentBlocks, '_meta' => $this->meta];
    }

    /**
     * Returns the question to ask the user, with the state to resume from,
     * or NULL when the turn is complete.
     *
     * @return array{elicitation: array, state: mixed}|null
     */
    public function getPendingElicitation(): ?array
    {
        if ($this->pendingElicitation === null) {
            return null;
        }
        return ['elicitation' => $this->pendingElicitation, 'state' => $this->pendingState];
    }

    private function resume(): string
    {
        if (($this->resumeState['step'] ?? null) !== 'contact') {
            return 'I lost track of that question; please ask again.';
        }
        $action = $this->elicitationResult['action'];
        if ($action !== 'accept') {
            return $action === 'decline' ? 'No problem: nothing was sent.' : 'Cancelled.';
        }
        $content = $this->elicitationResult['content'];
        $topic = isset($content['topic']) ? " about {$content['topic']}" : '';
        return "Thanks, {$content['name']}! We will write to {$content['email']}{$topic}.";
    }

    /**
     * A card for a Drupal node: a resource_link any client can follow, which
     * an entity-aware frontend renders as the node's teaser.
     */
    private static function entityCard(string $id): array
    {
        $hex = md5("node/{$id}");
        $uuid = implode('-', [substr($hex, 0, 8), substr($hex, 8, 4), substr($hex, 12, 4), substr($hex, 16, 4), substr($hex, 20, 12)]);
        return [
            'type' => 'resource_link',
            'uri' => "entity:node/{$id}",
            'name' => "node/{$id}",
            'title' => "Article {$id}",
            '_meta' => ['drupal.org/ai.entity' => ['entity_type' => 'node', 'id' => $id, 'uuid' => $uuid, 'view_mode' => 'teaser']],
        ];
    }

    private static function contactForm(): array
    {
        return [
            'message' => 'Who should we reply to?',
            'requestedSchema' => [
                'type' => 'object',
                'properties' => [
                    'name' => ['type' => 'string', 'title' => 'Name', 'minLength' => 1, 'maxLength' => 100],
                    'email' => ['type' => 'string', 'title' => 'Email', 'format' => 'email'],
                    'topic' => ['type' => 'string', 'title' => 'Topic', 'oneOf' => [
                        ['const' => 'billing', 'title' => 'Billing'],
                        ['const' => 'technical', 'title' => 'Technical'],
                    ]],
                ],
                'required' => ['name', 'email'],
            ],
        ];
    }
}
