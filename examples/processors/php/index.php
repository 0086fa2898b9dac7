<?php

/**
 * A chatd remote processor served by PHP's built-in server, no packages:
 *
 *   PROCESSOR_SECRET=change-me php -S 127.0.0.1:8001 index.php
 *
 * chatd POSTs each turn here as JSON; this script checks the signature,
 * runs ChatProcessor and answers with its reply as one JSON document.
 * docs/remote-processors.md in the chatd repository is the protocol.
 */

declare(strict_types=1);

require __DIR__ . '/ChatProcessor.php';

// Requests signed longer ago than this are refused as replays.
const MAX_AGE_SECONDS = 300;
const JSON_FLAGS = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR;

/**
 * Checks Chatd-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<raw body>">, over the body exactly as received.
 */
function signature_is_valid(string $header, string $body, string $secret): bool
{
    if (!preg_match('/^t=(\d+),v1=([0-9a-f]{64})$/', $header, $m)) {
        return false;
    }
    if (abs(time() - (int) $m[1]) > MAX_AGE_SECONDS) {
        return false;
    }
    return hash_equals(hash_hmac('sha256', $m[1] . '.' . $body, $secret), $m[2]);
}

function problem(int $status, string $title): void
{
    http_response_code($status);
    header('Content-Type: application/problem+json');
    echo json_encode(['type' => 'about:blank', 'title' => $title, 'status' => $status], JSON_FLAGS);
}

/**
 * Builds the answer from what the processor produced. Empty _meta is left
 * out rather than sent as [], which is what PHP encodes an empty array as.
 */
function answer(ChatProcessor $processor, string $text): array
{
    $answer = ['text' => $text];
    $structured = $processor->getStructuredResponse();
    if ($structured['content_blocks']) {
        $answer['content_blocks'] = $structured['content_blocks'];
    }
    if ($structured['_meta']) {
        $answer['_meta'] = $structured['_meta'];
    }
    if ($pending = $processor->getPendingElicitation()) {
        $answer['pause'] = $pending;
    }
    return $answer;
}

function handle(): void
{
    if ($_SERVER['REQUEST_METHOD'] !== 'POST') {
        problem(405, 'POST a turn');
        return;
    }
    $body = file_get_contents('php://input');
    $secret = getenv('PROCESSOR_SECRET') ?: '';
    if ($secret !== '' && !signature_is_valid($_SERVER['HTTP_CHATD_SIGNATURE'] ?? '', $body, $secret)) {
        problem(401, 'The request signature is not valid');
        return;
    }
    try {
        $turn = json_decode($body, true, 512, JSON_THROW_ON_ERROR);
    } catch (JsonException) {
        problem(400, 'The request is not JSON');
        return;
    }
    $processor = new ChatProcessor($turn['principal'], $turn['history']);
    if ($turn['resume'] !== null) {
        $processor->setElicitationResult($turn['resume']['result'], $turn['resume']['state']);
    }
    $text = $processor->execute($turn['message']['message']);
    header('Content-Type: application/json');
    echo json_encode(answer($processor, $text), JSON_FLAGS);
}

try {
    handle();
} catch (Throwable $e) {
    error_log((string) $e);
    problem(500, 'The processor failed');
}
