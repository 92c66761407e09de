import { describe, expect, it } from 'vitest';
import { answerResponse } from '../../shared/lambda/large-answers.js';

describe('Function: answerResponse', () => {
  it('answers an inline answer 200 with its body and its own content type', () => {
    // Act
    const response = answerResponse(
      { kind: 'inline', body: '<result/>', contentType: 'text/xml; charset=utf-8' },
      { 'content-type': 'application/json', 'x-request-id': 'r-1' },
    );
    // Assess
    expect(response).toEqual({
      status: 200,
      headers: { 'content-type': 'text/xml; charset=utf-8', 'x-request-id': 'r-1' },
      body: '<result/>',
    });
  });

  it('answers a stored answer 303 to its location, never to be cached, with the headers given', () => {
    const response = answerResponse(
      { kind: 'redirect', location: 'https://bucket.example/answers/demo/web-api/x.json?X-Amz-Expires=900' },
      { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r-2' },
    );
    expect(response).toEqual({
      status: 303,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-request-id': 'r-2',
        location: 'https://bucket.example/answers/demo/web-api/x.json?X-Amz-Expires=900',
        'cache-control': 'no-store',
      },
      body: '',
    });
  });
});
