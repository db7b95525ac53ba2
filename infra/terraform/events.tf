# EventBridge: the scan tick and the registry maintenance, every minute.

resource "aws_cloudwatch_event_rule" "scan" {
  name                = "${var.name}-scan"
  description         = "xjob scan tick"
  schedule_expression = "rate(1 minute)"
}

resource "aws_cloudwatch_event_target" "scan" {
  rule = aws_cloudwatch_event_rule.scan.name
  arn  = aws_lambda_function.scan.arn
}

resource "aws_lambda_permission" "scan_events" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.scan.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.scan.arn
}

resource "aws_cloudwatch_event_rule" "registry" {
  name                = "${var.name}-registry-maintenance"
  description         = "xjob registry maintenance (dead executors, lost jobs, retention)"
  schedule_expression = "rate(1 minute)"
}

resource "aws_cloudwatch_event_target" "registry" {
  rule = aws_cloudwatch_event_rule.registry.name
  arn  = aws_lambda_function.registry.arn
}

resource "aws_lambda_permission" "registry_events" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.registry.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.registry.arn
}

# A failed or throttled scheduled run is superseded by the next minute's:
# no asynchronous retries, and an event older than a minute is dropped;
# a failure is sent to the alarm topic (the function's role may publish).
resource "aws_lambda_function_event_invoke_config" "scan" {
  function_name                = aws_lambda_function.scan.function_name
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = 60
  destination_config {
    on_failure {
      destination = aws_sns_topic.alarm.arn
    }
  }
}

resource "aws_lambda_function_event_invoke_config" "registry" {
  function_name                = aws_lambda_function.registry.function_name
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = 60
  destination_config {
    on_failure {
      destination = aws_sns_topic.alarm.arn
    }
  }
}

# The lanes' events: Lambda retries a failed one twice (about 1 then 2 minutes later); the occurrence
# claim makes a repeat a no-op, so a late event is still dispatched, as the lane queues kept a task
# for days: up to Lambda's ceiling, 6 hours (a backlog alarms at 5 minutes, dispatch_event_age).
# Then the event goes to the dead-letter queue (sqs.tf), sent with the dispatch function's role.
resource "aws_lambda_function_event_invoke_config" "dispatch" {
  function_name                = aws_lambda_function.dispatch.function_name
  maximum_retry_attempts       = 2
  maximum_event_age_in_seconds = 21600
  destination_config {
    on_failure {
      destination = aws_sqs_queue.dispatch_dlq.arn
    }
  }
  # Lambda checks at creation that the role may send to the destination.
  depends_on = [aws_iam_role_policy.function]
}
