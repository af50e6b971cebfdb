{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_history("linkexpress_demo", "SALES", "ORDER_LINES") }}
