# Visibility timeout = 6 x the consuming function's timeout (AWS guidance for SQS event sources).

resource "aws_sqs_queue" "ring_dlq" {
  name                      = "${var.name}-ring-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "ring" {
  name                       = "${var.name}-ring"
  visibility_timeout_seconds = 300 # ring timeout 50 s x 6 (a failed bucket sets its own, shorter retry delay)
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.ring_dlq.arn
    maxReceiveCount     = 5
  })
}

resource "aws_sqs_queue" "dispatch_fast_dlq" {
  name                      = "${var.name}-dispatch-fast-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "dispatch_fast" {
  name                       = "${var.name}-dispatch-fast"
  visibility_timeout_seconds = 180 # dispatch timeout 30 s x 6
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dispatch_fast_dlq.arn
    maxReceiveCount     = 5
  })
}

resource "aws_sqs_queue" "dispatch_slow_dlq" {
  name                      = "${var.name}-dispatch-slow-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "dispatch_slow" {
  name                       = "${var.name}-dispatch-slow"
  visibility_timeout_seconds = 180 # dispatch timeout 30 s x 6
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dispatch_slow_dlq.arn
    maxReceiveCount     = 5
  })
}

# Event source mappings: partial batch failures, one concurrency ceiling per lane.
resource "aws_lambda_event_source_mapping" "ring" {
  # The mapping checks at creation that the role may receive from the queue.
  depends_on = [aws_iam_role_policy.ring]

  event_source_arn                   = aws_sqs_queue.ring.arn
  function_name                      = aws_lambda_function.ring.arn
  batch_size                         = 10
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = var.ring_concurrency
  }
}

resource "aws_lambda_event_source_mapping" "dispatch_fast" {
  # The mapping checks at creation that the role may receive from the queue.
  depends_on = [aws_iam_role_policy.dispatch]

  event_source_arn                   = aws_sqs_queue.dispatch_fast.arn
  function_name                      = aws_lambda_function.dispatch.arn
  batch_size                         = 10
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = var.fast_lane_concurrency
  }
}

resource "aws_lambda_event_source_mapping" "dispatch_slow" {
  # The mapping checks at creation that the role may receive from the queue.
  depends_on = [aws_iam_role_policy.dispatch]

  event_source_arn                   = aws_sqs_queue.dispatch_slow.arn
  function_name                      = aws_lambda_function.dispatch.arn
  batch_size                         = 10
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = var.slow_lane_concurrency
  }
}

# ---------------------------------------------------------------- results queue
# Executor results: the callback function records each request here on
# arrival; the dispatch function applies them in batches (one write per
# log page per batch, whatever the executors' request sizes).
resource "aws_sqs_queue" "results_dlq" {
  name                      = "${var.name}-results-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "results" {
  name                       = "${var.name}-results"
  visibility_timeout_seconds = 180 # dispatch timeout 30 s x 6
  message_retention_seconds  = 345600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.results_dlq.arn
    maxReceiveCount     = 5
  })
}

# Results gathered for a second: the page writes of a batch are shared by
# every request in it.
resource "aws_lambda_event_source_mapping" "results" {
  depends_on = [aws_iam_role_policy.dispatch]

  event_source_arn                   = aws_sqs_queue.results.arn
  function_name                      = aws_lambda_function.dispatch.arn
  batch_size                         = 1000
  maximum_batching_window_in_seconds = 1
  function_response_types            = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 2
  }
}
