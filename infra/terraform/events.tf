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
