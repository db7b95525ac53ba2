# The queues of local.queues (functions.tf), each with its dead-letter queue (5 receives, 14 days).
resource "aws_sqs_queue" "dlq" {
  for_each                  = local.queues
  name                      = "${var.name}-${each.key}-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "queue" {
  for_each                   = local.queues
  name                       = "${var.name}-${each.key}"
  visibility_timeout_seconds = each.value.visibility
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq[each.key].arn
    maxReceiveCount     = 5
  })
}

# Event source mappings: partial batch failures, a concurrency ceiling each.
resource "aws_lambda_event_source_mapping" "ring" {
  # The mapping checks at creation that the role may receive from the queue.
  depends_on = [aws_iam_role_policy.function]

  event_source_arn                   = aws_sqs_queue.queue["ring"].arn
  function_name                      = aws_lambda_function.ring.arn
  batch_size                         = 10
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = var.ring_concurrency
  }
}

# The lanes are asynchronous invocations of the dispatch function (XJOB_DISPATCH_FUNCTION, package
# lambdaqueue): no lane queue, no mapping. An event that failed Lambda's two retries, or waited past
# its maximum age, lands in this queue (events.tf, the dispatch function's event invoke config) as an
# invocation record with its tasks; nothing consumes it: the alarm tells an operator.
resource "aws_sqs_queue" "dispatch_dlq" {
  name                      = "${var.name}-dispatch-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

# ---------------------------------------------------------------- results queue
# Executor results: the callback function records each request on the results queue on
# arrival; the dispatch function applies them in batches (one write per log page per batch,
# whatever the executors' request sizes).
# Results gathered for a second: the page writes of a batch are shared by
# every request in it.
resource "aws_lambda_event_source_mapping" "results" {
  depends_on = [aws_iam_role_policy.function]

  event_source_arn                   = aws_sqs_queue.queue["results"].arn
  function_name                      = aws_lambda_function.dispatch.arn
  batch_size                         = 1000
  maximum_batching_window_in_seconds = 1
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 2
  }
}
