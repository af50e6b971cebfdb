{{ config(materialized='view') }}
{{ cdc_typed_current_state("goldengate_demo", "HR", "EMPLOYEES") }}
